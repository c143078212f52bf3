package csds

import (
	"errors"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// The A88 cache states map one to one onto ClientResourceStatus (A40 as
// updated by A88); anything else is UNKNOWN.
func TestClientStatus(t *testing.T) {
	for _, tc := range []struct {
		state xdsclient.CacheState
		want  adminv3.ClientResourceStatus
		num   int32
	}{
		{xdsclient.StateNone, adminv3.ClientResourceStatus_UNKNOWN, 0},
		{xdsclient.StateRequested, adminv3.ClientResourceStatus_REQUESTED, 1},
		{xdsclient.StateDoesNotExist, adminv3.ClientResourceStatus_DOES_NOT_EXIST, 2},
		{xdsclient.StateACKed, adminv3.ClientResourceStatus_ACKED, 3},
		{xdsclient.StateNACKed, adminv3.ClientResourceStatus_NACKED, 4},
		{xdsclient.StateReceivedError, adminv3.ClientResourceStatus_RECEIVED_ERROR, 5},
		{xdsclient.StateTimeout, adminv3.ClientResourceStatus_TIMEOUT, 6},
		{xdsclient.CacheState(99), adminv3.ClientResourceStatus_UNKNOWN, 0},
	} {
		got := ClientStatus(tc.state)
		if got != tc.want || int32(got) != tc.num {
			t.Errorf("ClientStatus(%v) = %v (%d), want %v (%d)", tc.state, got, got, tc.want, tc.num)
		}
		if tc.state >= xdsclient.StateRequested && tc.state <= xdsclient.StateTimeout && got.String() != tc.state.String() {
			t.Errorf("ClientStatus(%v) is spelled %v", tc.state, got)
		}
	}
}

func TestGenericXdsConfigFields(t *testing.T) {
	url := xdsresource.ClusterType.TypeURL()
	good, _ := anypb.New(&clusterv3.Cluster{Name: "c1"})
	rejected, _ := proto.Marshal(&clusterv3.Cluster{Name: "c1", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}})
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	t2 := t1.Add(time.Minute)
	nack := status.Error(codes.InvalidArgument, `cds "c1": rejected`)
	entries := []xdsclient.EntrySnapshot{
		// NACKED with an older version held.
		{TypeURL: url, Name: "c1", State: xdsclient.StateNACKed, Cached: true, Raw: good.GetValue(), Version: "1", UpdatedAt: t1,
			Err: nack, FailedVersion: "2", FailedAt: t2, FailedRaw: rejected},
		// Rejected bytes that do not parse: no failed_configuration.
		{TypeURL: url, Name: "c2", State: xdsclient.StateNACKed, Err: nack, FailedVersion: "2", FailedAt: t2, FailedRaw: []byte{0xff, 0xff}},
		// Timer: details only; an error that is not a status.
		{TypeURL: url, Name: "c3", State: xdsclient.StateDoesNotExist, Err: errors.New("plain error")},
		{TypeURL: url, Name: "c4", State: xdsclient.StateRequested},
	}
	b := builder{}
	got := b.genericXdsConfigs(entries)
	want := []*statusv3.ClientConfig_GenericXdsConfig{
		{TypeUrl: url, Name: "c1", ClientStatus: adminv3.ClientResourceStatus_NACKED, VersionInfo: "1", XdsConfig: good,
			LastUpdated: tsOf(t1), ErrorState: &adminv3.UpdateFailureState{
				Details: `cds "c1": rejected`, VersionInfo: "2", LastUpdateAttempt: tsOf(t2),
				FailedConfiguration: &anypb.Any{TypeUrl: url, Value: rejected},
			}},
		{TypeUrl: url, Name: "c2", ClientStatus: adminv3.ClientResourceStatus_NACKED, ErrorState: &adminv3.UpdateFailureState{
			Details: `cds "c1": rejected`, VersionInfo: "2", LastUpdateAttempt: tsOf(t2),
		}},
		{TypeUrl: url, Name: "c3", ClientStatus: adminv3.ClientResourceStatus_DOES_NOT_EXIST, ErrorState: &adminv3.UpdateFailureState{Details: "plain error"}},
		{TypeUrl: url, Name: "c4", ClientStatus: adminv3.ClientResourceStatus_REQUESTED},
	}
	if len(got) != len(want) {
		t.Fatalf("%d configs, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("entry %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
	// The whole response renders as JSON (grpcdebug `xds config`).
	if _, err := protojson.Marshal(&statusv3.ClientStatusResponse{Config: []*statusv3.ClientConfig{{GenericXdsConfigs: got}}}); err != nil {
		t.Errorf("protojson: %v", err)
	}

	// exclude_resource_contents: no bytes; only the held resource has a
	// last_updated, as without it.
	b = builder{exclude: true}
	got = b.genericXdsConfigs(entries)
	for i, g := range got {
		lu := g.GetLastUpdated()
		switch {
		case i == 0 && !lu.AsTime().Equal(t1):
			t.Errorf("entry 0: last_updated %v, want %v", lu.AsTime(), t1)
		case i > 0 && lu != nil:
			t.Errorf("entry %d holds nothing but has last_updated %v", i, lu)
		}
		if g.GetXdsConfig() != nil || g.GetErrorState().GetFailedConfiguration() != nil {
			t.Errorf("entry %d: contents not excluded", i)
		}
	}
	if b.genericXdsConfigs(nil) != nil {
		t.Errorf("no entries: want nil")
	}
}

func tsOf(t time.Time) *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}
