package placement

// Whole is one whole address of a custom resource in the thousandths that
// Worker.Resources and App.ResourcesPerExecutor count in: an executor asking
// Whole takes one GPU, 2*Whole two, 460 shares 46% of one.
const Whole = 1000

// wholeAddresses is how many whole addresses a request of amount takes (a
// request above Whole that is not a multiple of it is rounded up).
func wholeAddresses(amount int) int { return (amount + Whole - 1) / Whole }

// ResourceFit is how many executors that each ask for want fit in free:
// whole requests need whole free addresses, and a share fits on an address
// as many times as the address has room for it (a share never spans two
// addresses). Unlimited when want asks for nothing.
func ResourceFit(free map[string][]int, want map[string]int) int {
	n := Unlimited
	for name, amount := range want {
		if amount <= 0 {
			continue
		}
		k := 0
		if amount >= Whole {
			for _, f := range free[name] {
				if f >= Whole {
					k++
				}
			}
			k /= wholeAddresses(amount)
		} else {
			for _, f := range free[name] {
				k += max(f, 0) / amount
			}
		}
		if n = min(n, k); n == 0 {
			return 0
		}
	}
	return n
}

// PickResources chooses the addresses of one executor asking for want and
// takes them from free. Whole requests take the wholly free addresses of
// lowest index; a share takes the address with the least room that still
// holds it (best fit, so that whole addresses stay whole for whole
// requests), the lowest index among equals. It returns nil and leaves free
// unchanged when want does not fit.
func PickResources(free map[string][]int, want map[string]int) (map[string][]int, bool) {
	if ResourceFit(free, want) < 1 {
		return nil, false
	}
	var picked map[string][]int
	for name, amount := range want {
		if amount <= 0 {
			continue
		}
		if picked == nil {
			picked = make(map[string][]int, len(want))
		}
		addrs := free[name]
		if amount >= Whole {
			need := wholeAddresses(amount)
			for i := 0; i < len(addrs) && need > 0; i++ {
				if addrs[i] >= Whole {
					picked[name] = append(picked[name], i)
					addrs[i] -= Whole
					need--
				}
			}
			continue
		}
		best := -1
		for i, f := range addrs {
			if f >= amount && (best < 0 || f < addrs[best]) {
				best = i
			}
		}
		picked[name] = []int{best}
		addrs[best] -= amount
	}
	return picked, true
}

// cloneResources copies free so that a round's bookkeeping never writes to
// the caller's slices.
func cloneResources(free map[string][]int) map[string][]int {
	if free == nil {
		return nil
	}
	out := make(map[string][]int, len(free))
	for name, addrs := range free {
		out[name] = append([]int(nil), addrs...)
	}
	return out
}

// resourceFits lists, per worker, how many executors of app its resources
// hold; nil when the app asks for none (every worker holds Unlimited).
func resourceFits(app App, workers []Worker) []int {
	if !asksResources(app) {
		return nil
	}
	fits := make([]int, len(workers))
	for i, w := range workers {
		fits[i] = ResourceFit(w.Resources, app.ResourcesPerExecutor)
	}
	return fits
}

// asksResources reports whether app asks for any custom resource.
func asksResources(app App) bool {
	for _, amount := range app.ResourcesPerExecutor {
		if amount > 0 {
			return true
		}
	}
	return false
}
