package xdsclient_test

import (
	"github.com/xdslens/xdslens/xdsclient"
)

// recordedHooks records every hook event.
type recordedHooks struct {
	connectivity *hookLog[xdsclient.ConnectivityInfo]
	connected    *hookLog[xdsclient.ConnectedInfo]
	started      *hookLog[xdsclient.StreamInfo]
	ended        *hookLog[xdsclient.StreamEndInfo]
	failures     *hookLog[xdsclient.ServerFailureInfo]
	requests     *hookLog[xdsclient.RequestInfo]
	responses    *hookLog[xdsclient.ResponseInfo]
	states       *hookLog[xdsclient.CacheStateInfo]
	notified     *hookLog[xdsclient.NotificationInfo]
	timerStarts  *hookLog[xdsclient.ResourceTimerInfo]
	timerStops   *hookLog[xdsclient.ResourceTimerInfo]
	authServer   *hookLog[xdsclient.AuthorityServerInfo]
}

func newRecordedHooks() *recordedHooks {
	return &recordedHooks{
		connectivity: newHookLog[xdsclient.ConnectivityInfo](),
		connected:    newHookLog[xdsclient.ConnectedInfo](),
		started:      newHookLog[xdsclient.StreamInfo](),
		ended:        newHookLog[xdsclient.StreamEndInfo](),
		failures:     newHookLog[xdsclient.ServerFailureInfo](),
		requests:     newHookLog[xdsclient.RequestInfo](),
		responses:    newHookLog[xdsclient.ResponseInfo](),
		states:       newHookLog[xdsclient.CacheStateInfo](),
		notified:     newHookLog[xdsclient.NotificationInfo](),
		timerStarts:  newHookLog[xdsclient.ResourceTimerInfo](),
		timerStops:   newHookLog[xdsclient.ResourceTimerInfo](),
		authServer:   newHookLog[xdsclient.AuthorityServerInfo](),
	}
}

func (r *recordedHooks) hooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		ConnectivityChanged:    r.connectivity.add,
		ConnectedChanged:       r.connected.add,
		StreamStarted:          r.started.add,
		StreamEnded:            r.ended.add,
		ServerFailure:          r.failures.add,
		RequestSent:            r.requests.add,
		ResponseReceived:       r.responses.add,
		CacheStateChanged:      r.states.add,
		WatcherNotified:        r.notified.add,
		ResourceTimerStarted:   r.timerStarts.add,
		ResourceTimerStopped:   r.timerStops.add,
		AuthorityServerChanged: r.authServer.add,
	}
}
