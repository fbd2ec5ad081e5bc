package master

import (
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// The capacity the queues divide (scheduler.View.Capacity): what the
// placeable workers offer, kept as the index takes them in and out
// (syncIndex) rather than summed over the fleet each round.

// clusterCapacity is what the schedulable workers offer, kept as the index
// takes them in and out (syncIndex).
type clusterCapacity struct {
	cores, memory int
	res           map[string]int // thousandths of an address
	of            map[string]workerCap
}

type workerCap struct {
	cores, memory int
	res           map[string]int
}

func (k *clusterCapacity) put(w *workerInfo) {
	k.del(w.rec.ID)
	wc := workerCap{cores: w.rec.Cores, memory: w.rec.MemoryMB}
	if len(w.rec.Resources) > 0 {
		wc.res = map[string]int{}
		for r, addrs := range w.rec.Resources {
			wc.res[r] = len(addrs) * placement.Whole
		}
	}
	k.add(wc, 1)
	if k.of == nil {
		k.of = map[string]workerCap{}
	}
	k.of[w.rec.ID] = wc
}

func (k *clusterCapacity) del(id string) {
	if wc, ok := k.of[id]; ok {
		k.add(wc, -1)
		delete(k.of, id)
	}
}

func (k *clusterCapacity) add(wc workerCap, sign int) {
	k.cores += sign * wc.cores
	k.memory += sign * wc.memory
	for r, v := range wc.res {
		if k.res == nil {
			k.res = map[string]int{}
		}
		if k.res[r] += sign * v; k.res[r] == 0 {
			delete(k.res, r)
		}
	}
}

// view is the capacity as the scheduler reads it (its maps are shared:
// read only).
func (k *clusterCapacity) view() scheduler.Capacity {
	return scheduler.Capacity{Cores: k.cores, MemoryMB: k.memory, Resources: k.res}
}

// amount is the capacity as the API tells it.
func (k *clusterCapacity) amount() wire.Amount {
	a := wire.Amount{Cores: k.cores, MemoryMB: k.memory}
	for r, v := range k.res {
		if a.Resources == nil {
			a.Resources = wire.ResourceAmounts{}
		}
		a.Resources[r] = float64(v) / placement.Whole
	}
	return a
}
