package xdstest

import (
	"net"
	"testing"
)

// ClosedAddr returns a loopback address where nothing listens (a port the
// system gave out and this process closed again): a server never reached,
// or a port for a process the test starts.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
