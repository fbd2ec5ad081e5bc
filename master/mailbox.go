package master

import "sync"

// mailbox is an unbounded queue with a wake-up signal. The loop and its I/O
// goroutines talk through mailboxes so that neither ever blocks on the
// other: a loop blocked on a full writer queue while the writer blocks on a
// full loop queue would deadlock.
type mailbox[T any] struct {
	mu     sync.Mutex
	items  []T
	signal chan struct{}
}

func newMailbox[T any]() *mailbox[T] {
	return &mailbox[T]{signal: make(chan struct{}, 1)}
}

// put adds an item and wakes the reader.
func (m *mailbox[T]) put(item T) {
	m.mu.Lock()
	m.items = append(m.items, item)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// take removes and returns everything queued.
func (m *mailbox[T]) take() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	items := m.items
	m.items = nil
	return items
}

// ready is signalled after put.
func (m *mailbox[T]) ready() <-chan struct{} { return m.signal }

// empty reports whether nothing is queued.
func (m *mailbox[T]) empty() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items) == 0
}
