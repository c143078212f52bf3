package csds

// Client is what a Server reads from one xDS client, for tests that give
// it clients of their own.
type Client = client

// NewServerOf returns a server over the clients that list returns at each
// request.
func NewServerOf(list func() []Client, opts ...Option) *Server { return newServer(list, opts) }
