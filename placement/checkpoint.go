package placement

// A checkpoint lets a caller decide on an index without changing it: the
// scheduler runs a round's passes on the master's index (each pass sees
// what the passes before it took, at the cost of the workers they touch,
// not of a copy of the fleet), then rolls the index back to what it was
// given, so that the view it decided on is the view the master still
// holds, and the same view gives the same plan however often it is asked.

// checkpoint is the workers as they were before the first change since
// Checkpoint, each saved once.
type checkpoint struct {
	on    bool
	gen   uint64 // numbers the checkpoints: a slot saved under gen is saved
	saved []savedSlot
}

// savedSlot is a slot's worker as the checkpoint found it; added: the
// slot was not in the index then.
type savedSlot struct {
	s     *slot
	w     Worker
	added bool
}

// save keeps s's worker as it is, if the checkpoint is open and has not
// kept it yet: called before anything of s changes (detach).
func (c *checkpoint) save(s *slot) {
	if !c.on || s.saved == c.gen {
		return
	}
	s.saved = c.gen
	c.saved = append(c.saved, savedSlot{s: s, w: cloneWorker(s.w)})
}

// added notes a slot that was not in the index at the checkpoint.
func (c *checkpoint) added(s *slot) {
	if !c.on {
		return
	}
	s.saved = c.gen
	c.saved = append(c.saved, savedSlot{s: s, added: true})
}

// Checkpoint starts recording the index's changes, so that Rollback can
// undo them. Checkpoints do not nest: a second one starts afresh, keeping
// the changes made since the first.
func (x *Index) Checkpoint() {
	x.cp.gen++
	x.cp.on = true
	clear(x.cp.saved)
	x.cp.saved = x.cp.saved[:0]
}

// Rollback puts every worker changed since Checkpoint back as it was then
// (a worker put since is removed, one deleted since is put back) and
// closes the checkpoint. It costs a Put for each worker changed. Without
// an open checkpoint it does nothing.
func (x *Index) Rollback() {
	if !x.cp.on {
		return
	}
	x.cp.on = false
	for i := len(x.cp.saved) - 1; i >= 0; i-- {
		sv := x.cp.saved[i]
		cur, listed := x.byID[sv.s.w.ID]
		switch {
		case sv.added:
			if listed {
				x.Delete(sv.s.w.ID)
			}
		case listed && cur == sv.s:
			x.detach(cur)
			cur.w = sv.w
			x.attach(cur)
			if x.placer != nil {
				x.placer.Put(cur.w)
			}
		default: // deleted since (and perhaps put again): as it was
			if listed {
				x.Delete(sv.s.w.ID)
			}
			x.Put(sv.w)
		}
	}
	clear(x.cp.saved)
	x.cp.saved = x.cp.saved[:0]
}
