// Package rpctest runs RPCs through xdslens in tests.
//
// Env is a go-control-plane server, backends behind it and an xdslens
// pool and resolver of that server, configured by one bootstrap (which a
// second xDS client can use too, as the comparison with grpc-go's does).
// Call makes one RPC and says which backend and cluster answered; Poll
// repeats RPCs until a condition holds. The rest builds the route and
// endpoint resources that data-plane scenarios serve, beside the plainer
// ones of internal/xdswatch/demo/controlplane and its fault, retry and
// outlier detection settings, which the demo's tour uses too.
package rpctest
