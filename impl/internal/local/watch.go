package local

// ServicesChanged returns a channel that is closed the next time a live
// service is added, replaced or removed. A reader that blocks on one
// service (GET /v1/agent/service/<id>?hash=) takes the channel, reads,
// and waits on it: a change between the two still wakes it.
func (s *State) ServicesChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servicesChanged
}

// servicesMovedLocked wakes the readers waiting on ServicesChanged; s.mu
// is held.
func (s *State) servicesMovedLocked() {
	close(s.servicesChanged)
	s.servicesChanged = make(chan struct{})
}
