package scheduler

// maxFree bounds the recycled entries and runs kept after a burst.
const maxFree = 1024

// forgetLocked removes an entry that has nothing pending and nothing in
// flight (or whose pending run is dropped) and recycles it.
func (s *Scheduler[K]) forgetLocked(e *entry[K]) {
	delete(s.entries, e.key)
	if len(s.freeEntries) < maxFree {
		sd := e.side
		if sd != nil {
			if sd.extras != nil {
				*sd.extras = runExtras{}
			}
			*sd = side[K]{extras: sd.extras}
		}
		*e = entry[K]{side: sd, seq: e.seq} // seq survives: stale ready slots may still point here
		s.freeEntries = append(s.freeEntries, e)
	}
}

// newEntry returns an entry for key, recycled if one is free.
func (s *Scheduler[K]) newEntry(key K) *entry[K] {
	e := reuse(&s.freeEntries)
	e.key = key
	e.heapIdx = -1
	return e
}

// newProc returns a run, recycled if one is free.
func (s *Scheduler[K]) newProc() *proc[K] { return reuse(&s.freeProcs) }

// reuse takes the last object of the free list *free, or makes a new one.
func reuse[T any](free *[]*T) *T {
	n := len(*free)
	if n == 0 {
		return new(T)
	}
	p := (*free)[n-1]
	(*free)[n-1] = nil
	*free = (*free)[:n-1]
	return p
}

// freeProc recycles p, whose run is done. Its state must be procReady.
func (s *Scheduler[K]) freeProc(p *proc[K]) {
	p.started, p.prev, p.next, p.ctx, p.measured = 0, nil, nil, nil, false
	if p.source != "" {
		p.source = ""
	}
	if p.observed {
		p.observed = false
		*p.o = procObs[K]{}
	}
	if len(s.freeProcs) < maxFree {
		s.freeProcs = append(s.freeProcs, p)
	}
}
