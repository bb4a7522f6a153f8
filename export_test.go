package lookahead

// Holds reports whether c's near cache holds id's object, without counting
// a read: for tests that must not fill it themselves.
func Holds(c *Client, id string) bool {
	if c.near == nil {
		return false
	}
	c.near.mu.RLock()
	defer c.near.mu.RUnlock()
	e := c.near.entries[id]
	return e != nil && e.obj != nil
}
