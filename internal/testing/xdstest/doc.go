// Package xdstest provides a scripted ADS server for tests of xDS clients,
// in particular tests of how a client handles failures.
//
// Unlike a real management server, an [ADSServer] decides nothing: every
// response, error and stream end is chosen by the test. A test takes the
// streams the client opens with [ADSServer.NextStream], reads the client's
// requests with [Stream.Recv] or [Stream.RecvType], answers with
// [Stream.Send], ends the stream with [Stream.End], or stays silent. It can
// take the whole server away with [ADSServer.Stop] and bring it back on the
// same address with [ADSServer.Restart].
//
//	srv := xdstest.NewADSServer(t)
//	// ... point the client at srv.Addr() and subscribe ...
//	st, err := srv.NextStream(ctx)
//	req, err := st.RecvType(ctx, listenerTypeURL)
//	err = st.Send(xdstest.Response(listenerTypeURL, "1", listener))
//	st.End(status.Error(codes.Unavailable, "going away"))
//
// Everything waits on channels and contexts; nothing sleeps. The server
// listens on 127.0.0.1 only and stops when the test ends. It serves both
// ADS protocols: State of the World streams are taken with
// [ADSServer.NextStream] as [Stream]s, incremental (delta) streams with
// [ADSServer.NextDeltaStream] as [DeltaStream]s, which work alike with
// delta messages ([DeltaResponse] builds one).
//
// For the tests of the xdsclient package and of the packages built on it,
// it also has helpers that fail a test at once when what it waits for does
// not come within [Timeout]: a [Script] takes streams and requests and
// sends responses, a [Watcher] records the callbacks of a watch, a
// [Bootstrap] is the configuration of a client of loopback servers, and
// [ClientOptions] and [NewClient] make a client that suits a test. For
// benchmarks, a [PushServer] sends [FullStateClusters] responses to a
// client whose watches share one [Countdown].
//
// The package is not a _test.go file so that the tests of other packages
// can import it; it is meant for tests only.
package xdstest
