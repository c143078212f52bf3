package routing

import (
	"context"
	"fmt"
	"math/bits"
	"regexp"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/metadata"
)

// hashPolicy is one compiled hash policy of a route (gRFC A42).
type hashPolicy struct {
	kind     routeconfig.HashPolicyKind
	header   string
	rewrite  *rewrite // nil without regex_rewrite
	terminal bool
	skip     bool // a -bin header: never hashed
	ctype    bool // content-type: always "application/grpc"
}

func compileHashPolicies(ps []routeconfig.HashPolicy) ([]hashPolicy, error) {
	out := make([]hashPolicy, 0, len(ps))
	for i, p := range ps {
		hp := hashPolicy{kind: p.Kind, header: p.HeaderName, terminal: p.Terminal}
		hp.skip = strings.HasSuffix(p.HeaderName, "-bin")
		hp.ctype = p.HeaderName == "content-type"
		if p.Kind == routeconfig.HashHeader && p.Regex != "" {
			re, err := regexp.Compile(p.Regex)
			if err != nil {
				return nil, fmt.Errorf("hash_policy[%d] regex_rewrite %q: %w", i, p.Regex, err)
			}
			hp.rewrite = newRewrite(re, p.Substitution)
		}
		out = append(out, hp)
	}
	return out, nil
}

// HasHashPolicies reports whether route i has hash policies.
func (t *Table) HasHashPolicies(i int) bool {
	return i >= 0 && i < len(t.actions) && len(t.actions[i].hashes) > 0
}

// Hash computes the request hash of an RPC that route i matched, from the
// route's hash policies (gRFC A42), in order: a header policy hashes the
// header's values joined with "," (after its regex_rewrite) with xxHash64
// and is skipped when the header is absent or ends in "-bin"; a
// filter_state policy for "io.grpc.channel_id" contributes channelID. The
// policies' hashes are combined as Envoy and gRPC combine them (the hash so
// far rotated left by one bit, then XORed with the next), and a terminal
// policy that produced a hash ends the evaluation. ok is false when no
// policy produced a hash.
func (t *Table) Hash(ctx context.Context, i int, channelID uint64) (hash uint64, ok bool) {
	if i < 0 || i >= len(t.actions) {
		return 0, false
	}
	for k := range t.actions[i].hashes {
		p := &t.actions[i].hashes[k]
		var h uint64
		switch p.kind {
		case routeconfig.HashHeader:
			v, present := p.value(ctx)
			if !present {
				continue
			}
			if p.rewrite == nil {
				h = xxhash.Sum64String(v)
				break
			}
			var d xxhash.Digest
			d.Reset()
			p.rewrite.writeTo(&d, v)
			h = d.Sum64()
		case routeconfig.HashChannelID:
			h = channelID
		default:
			continue
		}
		hash, ok = bits.RotateLeft64(hash, 1)^h, true
		if p.terminal {
			break
		}
	}
	return hash, ok
}

// value returns the value a header policy hashes, before its
// regex_rewrite, and whether the header is there to hash.
func (p *hashPolicy) value(ctx context.Context) (string, bool) {
	var v string
	switch {
	case p.skip:
		return "", false
	case p.ctype:
		v = "application/grpc"
	default:
		vs := metadata.ValueFromOutgoingContext(ctx, p.header)
		switch len(vs) {
		case 0:
			return "", false
		case 1:
			v = vs[0]
		default:
			v = strings.Join(vs, ",")
		}
	}
	return v, true
}
