package xdsclient

// Source is what observers attach to: one Client, or a Pool and every
// client it holds. Package telemetry follows a Source's clients with
// Observe; package csds lists them with Clients at every request.
type Source interface {
	// Clients returns the source's clients now, sorted by target.
	Clients() []*Client
	// Observe calls added for every client of the source now and every
	// client it gets later, and removed for each just before the source
	// closes it; stop ends the calls. The calls run one at a time, in the
	// order of their events, and never under a lock of the client.
	Observe(added, removed func(*Client)) (stop func())
}

var (
	_ Source = (*Client)(nil)
	_ Source = (*Pool)(nil)
)

// Clients returns c: a Client is a Source of itself alone.
func (c *Client) Clients() []*Client { return []*Client{c} }

// Observe calls added with c at once. A Client never calls removed: the
// one who made it closes it, not the Source. stop does nothing.
func (c *Client) Observe(added, removed func(*Client)) (stop func()) {
	if added != nil {
		added(c)
	}
	return func() {}
}
