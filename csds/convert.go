package csds

import (
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/xdslens/xdslens/xdsclient"

	"github.com/xdslens/xdslens/internal/redact"
	"github.com/xdslens/xdslens/internal/truncate"
)

// What a response shows of a server's strings is bounded, so that a server
// cannot make every entry it names, in every CSDS response, megabytes long:
// version_info (of the resource held, or of the update that failed) is cut
// at maxShown bytes and error_state.details at maxDetails (the client's
// error messages are bounded there already), each cut marked.
const (
	maxShown   = 1 << 10
	maxDetails = 16 << 10
)

// builder turns cache entries into GenericXdsConfig messages.
type builder struct {
	exclude bool // exclude_resource_contents
}

// ClientStatus returns the CSDS client_status of a cache state: the A88
// states map one to one; StateNone and unknown states are UNKNOWN.
func ClientStatus(s xdsclient.CacheState) adminv3.ClientResourceStatus {
	switch s {
	case xdsclient.StateRequested:
		return adminv3.ClientResourceStatus_REQUESTED
	case xdsclient.StateDoesNotExist:
		return adminv3.ClientResourceStatus_DOES_NOT_EXIST
	case xdsclient.StateACKed:
		return adminv3.ClientResourceStatus_ACKED
	case xdsclient.StateNACKed:
		return adminv3.ClientResourceStatus_NACKED
	case xdsclient.StateReceivedError:
		return adminv3.ClientResourceStatus_RECEIVED_ERROR
	case xdsclient.StateTimeout:
		return adminv3.ClientResourceStatus_TIMEOUT
	}
	return adminv3.ClientResourceStatus_UNKNOWN
}

// genericXdsConfigs converts entries, keeping their order. The messages
// (and their timestamps and error states) are allocated in a few slabs
// rather than one by one, so a dump of many entries costs a handful of
// allocations.
func (b *builder) genericXdsConfigs(entries []xdsclient.EntrySnapshot) []*statusv3.ClientConfig_GenericXdsConfig {
	if len(entries) == 0 {
		return nil
	}
	nts, nerr, ncached := 0, 0, 0
	for i := range entries {
		e := &entries[i]
		if e.Cached {
			ncached++
		}
		if e.Cached {
			nts++
		}
		if e.Err != nil {
			nerr++
			if !e.FailedAt.IsZero() {
				nts++
			}
		}
	}
	cfgs := make([]statusv3.ClientConfig_GenericXdsConfig, len(entries))
	out := make([]*statusv3.ClientConfig_GenericXdsConfig, len(entries))
	tss := make([]timestamppb.Timestamp, nts)
	errs := make([]adminv3.UpdateFailureState, nerr)
	var anys []anypb.Any
	if !b.exclude {
		anys = make([]anypb.Any, ncached)
	}
	ts := func(t time.Time) *timestamppb.Timestamp {
		p := &tss[0]
		tss = tss[1:]
		if !t.IsZero() {
			p.Seconds, p.Nanos = t.Unix(), int32(t.Nanosecond())
		}
		return p
	}
	for i := range entries {
		e := &entries[i]
		g := &cfgs[i]
		out[i] = g
		g.TypeUrl = e.TypeURL
		g.Name = e.Name
		g.ClientStatus = ClientStatus(e.State)
		if e.Cached {
			g.VersionInfo = truncate.String(e.Version, maxShown)
			if !b.exclude {
				a := &anys[0]
				anys = anys[1:]
				a.TypeUrl = e.TypeURL
				a.Value, _ = redact.Bytes(e.TypeURL, e.Raw)
				g.XdsConfig = a
			}
			g.LastUpdated = ts(e.UpdatedAt)
		}
		if e.Err != nil {
			fs := &errs[0]
			errs = errs[1:]
			fs.Details = truncate.String(errorMessage(e.Err), maxDetails)
			if !e.FailedAt.IsZero() {
				fs.VersionInfo = truncate.String(e.FailedVersion, maxShown)
				fs.LastUpdateAttempt = ts(e.FailedAt)
			}
			if e.FailedRaw != nil && !b.exclude && parses(e.TypeURL, e.FailedRaw) {
				if raw, _ := redact.Bytes(e.TypeURL, e.FailedRaw); raw != nil {
					fs.FailedConfiguration = &anypb.Any{TypeUrl: e.TypeURL, Value: raw}
				}
			}
			g.ErrorState = fs
		}
	}
	return out
}

// errorMessage returns the message of a status error without the "rpc
// error: code = ... desc =" wrapping, or err.Error() for other errors. The
// client's messages name the resource, the server and the cause.
func errorMessage(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}

// parses reports whether b is a valid encoding of the message named by
// typeURL, when that type is linked in. Rejected bytes that do not parse
// are left out of failed_configuration: an Any that cannot be decoded makes
// JSON renderings of the whole response fail (grpcdebug's `xds config`).
func parses(typeURL string, b []byte) bool {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return true
	}
	return proto.Unmarshal(b, mt.New().Interface()) == nil
}
