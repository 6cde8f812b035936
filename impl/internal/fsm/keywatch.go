package fsm

import "sync"

// keyWatches holds one channel per watched key, shared by all its waiters.
// Without it, 10,000 reads blocked on 10,000 keys would all wake, and each
// read the state again, at every write to any one of them.
type keyWatches struct {
	mu    sync.Mutex
	byKey map[string]*keyWatch
}

type keyWatch struct {
	ch      chan struct{}
	waiters int
}

// watch returns key's channel and a stop that forgets this waiter; the last
// waiter to stop before a change removes the channel, so keys watched once
// and never written leave nothing behind.
func (w *keyWatches) watch(key string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kw := w.byKey[key]
	if kw == nil {
		if w.byKey == nil {
			w.byKey = map[string]*keyWatch{}
		}
		kw = &keyWatch{ch: make(chan struct{})}
		w.byKey[key] = kw
	}
	kw.waiters++
	var once sync.Once
	return kw.ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			kw.waiters--
			// A fired watch is already gone, and a newer one may hold its key.
			if kw.waiters == 0 && w.byKey[key] == kw {
				delete(w.byKey, key)
			}
		})
	}
}

// fire wakes the waiters of keys. Call it after the change is visible to
// readers, so a woken read sees it.
func (w *keyWatches) fire(keys []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if kw := w.byKey[k]; kw != nil {
			close(kw.ch)
			delete(w.byKey, k)
		}
	}
}

// fireAll wakes every waiter: a snapshot restore, or a state machine
// replaced by a test seam, where the changed keys are not listed.
func (w *keyWatches) fireAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, kw := range w.byKey {
		close(kw.ch)
		delete(w.byKey, k)
	}
}

// watched is the number of keys with waiters (tests).
func (w *keyWatches) watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byKey)
}
