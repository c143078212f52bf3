// Package demo is the demo of the xdswatch command, which runs when no
// bootstrap is given: an embedded control plane on loopback serving a
// listener, its route configuration, a cluster with load reporting and
// its endpoints (two gRPC backends the demo runs), and the Listener of an
// xDS-enabled server under mTLS and RBAC, with certificates made at start;
// and the tour (--demo-tour), which walks the client through every cache
// state of gRFC A88 and A71, the server through RBAC and its serving
// modes, and a failing backend through outlier detection, retries and
// faults, announcing each step and waiting until the client shows it.
//
// The servers it runs are its subpackages: controlplane (a go-control-plane
// management server), backends, lrsserver (load reports), certs and
// serverres (the server's resources). They ship in xdswatch, and the
// module's tests use them too.
package demo
