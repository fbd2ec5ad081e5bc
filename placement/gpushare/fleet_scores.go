package gpushare

// How the fleet finds its best worker fast: each kind's scores kept one
// byte a worker, in blocks with their tops (fleet.go); and the check of a
// policy's pick of resource addresses.

import (
	"encoding/binary"
	"slices"

	"github.com/berth-cluster/berth/placement"
)

// scoreBlock is how many workers' scores one byte of a kind's top
// covers: a decision looks at the tops, then at one block. (A variable
// for the tests.)
var scoreBlock = 512

// best is the first worker with k's highest score, -1 when none can hold
// an executor of k: in the first block whose top is the highest.
func (k *fleetKind) best() int {
	b := firstMax(k.top)
	if b < 0 {
		return -1
	}
	return b*scoreBlock + firstMax(k.block(b))
}

// block is score's block b (the scores top[b] is the highest of).
func (k *fleetKind) block(b int) []uint8 {
	return k.score[b*scoreBlock : min((b+1)*scoreBlock, len(k.score))]
}

// firstMax is the index of the first highest byte of b, -1 when all are
// 0. The bytes are at most 127, so that adding 127−best to each of eight
// at once (no carry from one to the next) sets the top bit of those above
// best: a word of eight is looked at byte by byte only when it holds one.
func firstMax(b []uint8) int {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	best, at := uint8(0), -1
	add := uint64(127) * ones
	i := 0
	for ; i+16 <= len(b); i += 16 {
		w0, w1 := binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])
		if ((w0+add)|(w1+add))&tops == 0 {
			continue
		}
		for j := i; j < i+16; j++ {
			if b[j] > best {
				best, at = b[j], j
			}
		}
		add = uint64(127-best) * ones
	}
	for j := i; j < len(b); j++ {
		if b[j] > best {
			best, at = b[j], j
		}
	}
	return at
}

// validShare reports whether picked, a policy's pick, gives exactly what
// want asks, on distinct addresses that have it free (placement's rule for
// a ResourcePicker's choice).
func validShare(free map[string][]int, want map[string]int, picked map[string][]int) bool {
	if picked == nil {
		return false
	}
	for name, amount := range want {
		if amount <= 0 {
			continue
		}
		addrs, n := picked[name], 1
		if amount >= placement.Whole {
			n = (amount + placement.Whole - 1) / placement.Whole
		}
		if len(addrs) != n {
			return false
		}
		for j, a := range addrs {
			if a < 0 || a >= len(free[name]) || slices.Contains(addrs[:j], a) || free[name][a] < min(amount, placement.Whole) {
				return false
			}
		}
	}
	for name := range picked {
		if want[name] <= 0 {
			return false
		}
	}
	return true
}
