package near

// Take removes and returns up to max queued events of s (nil when none),
// no longer counted: TakeHeld released at once, as a subscriber whose
// messages are written at once would. The tests' way of reading a queue.
func (h *Hub) Take(s *Subscriber, max int) []Event {
	evs, release := h.TakeHeld(s, max)
	release()
	return evs
}
