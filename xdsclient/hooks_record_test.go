package xdsclient_test

import (
	"fmt"

	"github.com/xdslens/xdslens/xdsclient"
)

// recordedHooks records every hook event, by kind, and all of them in one
// sequence (seq) in the order the hooks ran.
type recordedHooks struct {
	connectivity *hookLog[xdsclient.ConnectivityInfo]
	connected    *hookLog[xdsclient.ConnectedInfo]
	started      *hookLog[xdsclient.StreamInfo]
	ended        *hookLog[xdsclient.StreamEndInfo]
	startFailed  *hookLog[xdsclient.StreamEndInfo]
	closed       *hookLog[xdsclient.ChannelInfo]
	failures     *hookLog[xdsclient.ServerFailureInfo]
	requests     *hookLog[xdsclient.RequestInfo]
	responses    *hookLog[xdsclient.ResponseInfo]
	states       *hookLog[xdsclient.CacheStateInfo]
	notified     *hookLog[xdsclient.NotificationInfo]
	timerStarts  *hookLog[xdsclient.ResourceTimerInfo]
	timerStops   *hookLog[xdsclient.ResourceTimerInfo]
	authServer   *hookLog[xdsclient.AuthorityServerInfo]
	seq          *hookLog[string]
}

func newRecordedHooks() *recordedHooks {
	return &recordedHooks{
		connectivity: newHookLog[xdsclient.ConnectivityInfo](),
		connected:    newHookLog[xdsclient.ConnectedInfo](),
		started:      newHookLog[xdsclient.StreamInfo](),
		ended:        newHookLog[xdsclient.StreamEndInfo](),
		startFailed:  newHookLog[xdsclient.StreamEndInfo](),
		closed:       newHookLog[xdsclient.ChannelInfo](),
		failures:     newHookLog[xdsclient.ServerFailureInfo](),
		requests:     newHookLog[xdsclient.RequestInfo](),
		responses:    newHookLog[xdsclient.ResponseInfo](),
		states:       newHookLog[xdsclient.CacheStateInfo](),
		notified:     newHookLog[xdsclient.NotificationInfo](),
		timerStarts:  newHookLog[xdsclient.ResourceTimerInfo](),
		timerStops:   newHookLog[xdsclient.ResourceTimerInfo](),
		authServer:   newHookLog[xdsclient.AuthorityServerInfo](),
		seq:          newHookLog[string](),
	}
}

// both records v in l and, described by what, in r.seq.
func both[T any](r *recordedHooks, l *hookLog[T], what func(T) string) func(T) {
	return func(v T) {
		r.seq.add(what(v))
		l.add(v)
	}
}

func (r *recordedHooks) hooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		ConnectivityChanged: both(r, r.connectivity, func(i xdsclient.ConnectivityInfo) string { return "connectivity " + i.Server + " " + i.State.String() }),
		ConnectedChanged:    both(r, r.connected, func(i xdsclient.ConnectedInfo) string { return fmt.Sprintf("connected %s %v", i.Server, i.Connected) }),
		StreamStarted:       both(r, r.started, func(i xdsclient.StreamInfo) string { return "stream-started " + i.Server }),
		StreamEnded:         both(r, r.ended, func(i xdsclient.StreamEndInfo) string { return "stream-ended " + i.Server }),
		StreamStartFailed:   both(r, r.startFailed, func(i xdsclient.StreamEndInfo) string { return "stream-start-failed " + i.Server }),
		ChannelClosed:       both(r, r.closed, func(i xdsclient.ChannelInfo) string { return "channel-closed " + i.Server }),
		ServerFailure:       both(r, r.failures, func(i xdsclient.ServerFailureInfo) string { return "server-failure " + i.Server }),
		RequestSent:         both(r, r.requests, func(i xdsclient.RequestInfo) string { return "request " + i.TypeURL }),
		ResponseReceived:    both(r, r.responses, func(i xdsclient.ResponseInfo) string { return "response " + i.TypeURL + " " + i.Version }),
		CacheStateChanged: both(r, r.states, func(i xdsclient.CacheStateInfo) string {
			return fmt.Sprintf("state %s %v->%v", i.Name, i.Old, i.New)
		}),
		WatcherNotified:      both(r, r.notified, func(i xdsclient.NotificationInfo) string { return "notified " + i.Name + " " + i.Kind.String() }),
		ResourceTimerStarted: both(r, r.timerStarts, func(i xdsclient.ResourceTimerInfo) string { return "timer-started " + i.Name }),
		ResourceTimerStopped: both(r, r.timerStops, func(i xdsclient.ResourceTimerInfo) string { return "timer-stopped " + i.Name }),
		AuthorityServerChanged: both(r, r.authServer, func(i xdsclient.AuthorityServerInfo) string {
			return "authority-server " + i.Authority + " " + i.Server
		}),
	}
}
