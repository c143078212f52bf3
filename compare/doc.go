// Package compare runs xdslens's data plane beside grpc-go's own xDS
// client, on the same control plane and backends, and fails where the two
// differ, except in the differences it names.
//
// It is a module of its own because it compiles grpc-go's whole xDS client
// (94 packages that nothing else here needs): the repository's test command
// stays quick, and CI runs this module after it:
//
//	cd compare && go test -race -vet=all ./...
//
// BenchmarkRPC times unary RPCs through both channels in one run.
package compare
