package scheduler

// maxFree bounds the recycled entries and runs kept after a burst.
const maxFree = 1024

// forgetLocked removes an entry that has nothing pending and nothing in
// flight (or whose pending run is dropped) and recycles it.
func (s *Scheduler[K]) forgetLocked(e *entry[K]) {
	delete(s.entries, e.key)
	if len(s.freeEntries) < maxFree {
		sd := e.s
		if sd != nil {
			if sd.x != nil {
				*sd.x = extras{}
			}
			*sd = side{x: sd.x}
		}
		*e = entry[K]{s: sd, seq: e.seq} // seq survives: stale ready slots may still point here
		s.freeEntries = append(s.freeEntries, e)
	}
}

func (s *Scheduler[K]) newEntry(key K) *entry[K] {
	var e *entry[K]
	if n := len(s.freeEntries); n > 0 {
		e = s.freeEntries[n-1]
		s.freeEntries[n-1] = nil
		s.freeEntries = s.freeEntries[:n-1]
	} else {
		e = new(entry[K])
	}
	e.key = key
	e.heapIdx = -1
	return e
}

func (s *Scheduler[K]) newProc() *proc {
	if n := len(s.freeProcs); n > 0 {
		p := s.freeProcs[n-1]
		s.freeProcs[n-1] = nil
		s.freeProcs = s.freeProcs[:n-1]
		return p
	}
	return new(proc)
}

func (s *Scheduler[K]) freeProc(p *proc) {
	*p = proc{}
	if len(s.freeProcs) < maxFree {
		s.freeProcs = append(s.freeProcs, p)
	}
}
