// Package handshake carries the TLS settings of a cluster (gRFC A29) from
// the load-balancing policy of an xdslens channel, which knows the
// cluster of every address it connects to, to the xDS transport
// credentials of the channel, which make the connection's handshake.
//
// The policy sets an Info on each address of a cluster whose
// transport_socket asks for TLS (Set); gRPC hands the address's attributes
// to the credentials' ClientHandshake (credentials.ClientHandshakeInfo),
// which read it (Get). An address without an Info belongs to a cluster
// without a transport_socket.
//
// An Info is made per address: besides the cluster's Settings, which its
// addresses share, it carries the endpoint's hostname, from which the
// credentials take the server name when the cluster says auto_host_sni
// (gRFC A101). Infos compare by value (Equal), so that an update of the
// same cluster with the same settings keeps the connections to its
// endpoints.
//
// Settings are made once per config of the cluster, when the policy
// takes it (NewSettings): what the handshakes need compiled from the
// UpstreamTlsContext, its SAN matchers, is compiled then, never at a
// handshake, and shared by the concurrent handshakes with every endpoint
// of the cluster. A new config makes new Settings: nothing compiled from
// one config serves another.
package handshake

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/sanmatch"
)

// Info is the TLS settings of the cluster an address belongs to.
type Info struct {
	// Cluster is the cluster's name, for errors.
	Cluster string
	// Settings are the cluster's TLS settings; never nil.
	Settings *Settings
	// Store holds the bootstrap's certificate provider instances that
	// Settings name.
	Store *certstore.Store
	// Hostname is the endpoint's hostname, possibly with a port: an EDS
	// endpoint's hostname, or the "host:port" a LOGICAL_DNS cluster
	// resolves; empty when it has none.
	Hostname string
}

// Equal reports whether o is an *Info with the same settings.
func (i *Info) Equal(o any) bool {
	oi, ok := o.(*Info)
	if !ok || i == nil || oi == nil {
		return ok && i == oi
	}
	return i.Cluster == oi.Cluster && i.Store == oi.Store && i.Hostname == oi.Hostname &&
		reflect.DeepEqual(i.Settings.Security(), oi.Settings.Security())
}

// Key identifies the settings of i apart from the cluster's name:
// connections are shared by the clusters whose Infos have the same Key
// (the server name sent may come from the hostname, so it is part of it).
func (i *Info) Key() string {
	return fmt.Sprintf("%p %q %+v", i.Store, i.Hostname, *i.Settings.Security())
}

// Settings are a cluster's validated UpstreamTlsContext with its SAN
// matchers compiled. They are immutable: the Infos of the cluster's
// addresses, and their concurrent handshakes, share them.
type Settings struct {
	security *security.Config
	sans     *sanmatch.Matchers
}

// NewSettings compiles the SAN matchers of sc, a cluster's validated
// UpstreamTlsContext. It fails when sc is nil, or when a matcher does not
// compile (which a validated sc never has), naming the matcher.
func NewSettings(sc *security.Config) (*Settings, error) {
	if sc == nil {
		return nil, errors.New("no UpstreamTlsContext")
	}
	sans, err := sanmatch.Compile(sc.SANMatchers)
	if err != nil {
		return nil, err
	}
	return &Settings{security: sc, sans: sans}, nil
}

// Security returns the UpstreamTlsContext the settings were made from;
// nil for nil Settings.
func (s *Settings) Security() *security.Config {
	if s == nil {
		return nil
	}
	return s.security
}

// SANs returns the matchers compiled from Security's SANMatchers.
func (s *Settings) SANs() *sanmatch.Matchers { return s.sans }

type key struct{}

// Set returns addr with info in its attributes.
func Set(addr resolver.Address, info *Info) resolver.Address {
	addr.Attributes = addr.Attributes.WithValue(key{}, info)
	return addr
}

// Get returns the Info of the address whose attributes are attrs, nil
// when it has none.
func Get(attrs *attributes.Attributes) *Info {
	info, _ := attrs.Value(key{}).(*Info)
	return info
}

// Credentials are transport credentials that apply the Info of each
// address: those of package xdscreds. The load-balancing policy sets Infos
// only on the addresses of channels whose credentials are Credentials; on
// other channels, it fails the RPCs of clusters that ask for TLS rather
// than send them in plaintext.
type Credentials interface {
	credentials.TransportCredentials
	// AppliesClusterSecurity reports true.
	AppliesClusterSecurity() bool
}

// Applies reports whether creds apply the Infos of addresses.
func Applies(creds credentials.TransportCredentials) bool {
	c, ok := creds.(Credentials)
	return ok && c.AppliesClusterSecurity()
}
