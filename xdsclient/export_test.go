package xdsclient

import "time"

// DumpHolds is Dump, also returning how long each holding of the client's
// lock lasted: the longest an update can wait behind a dump.
func DumpHolds(c *Client) ([]EntrySnapshot, []time.Duration) {
	var holds []time.Duration
	out := c.dump(func(d time.Duration) { holds = append(holds, d) })
	return out, holds
}
