package httpfilter

import (
	"errors"
	"fmt"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// RouterTypeURL is the config type of the router, the filter that ends
// every filter chain.
const RouterTypeURL = TypeURLPrefix + "envoy.extensions.filters.http.router.v3.Router"

// router is the router filter: its config is read and ignored (gRFC A39),
// and it runs nothing, the data plane itself routing the RPC.
type router struct{}

func (router) TypeURLs() []string { return []string{RouterTypeURL} }

func (router) ParseConfig(cfg *anypb.Any) (Config, error) {
	if cfg.GetTypeUrl() != RouterTypeURL {
		return nil, fmt.Errorf("router: config of type %q, want %q", cfg.GetTypeUrl(), RouterTypeURL)
	}
	if err := proto.Unmarshal(cfg.GetValue(), new(routerv3.Router)); err != nil {
		return nil, fmt.Errorf("router: %v", err)
	}
	return nil, nil
}

func (router) ParseOverride(*anypb.Any) (Config, error) {
	return nil, errors.New("router: takes no override")
}

func (router) BuildServerInterceptor(Config, Config, ServerEnv) (ServerInterceptor, error) {
	return nil, nil
}

func (router) BuildClientInterceptor(Config, Config) (ClientInterceptor, error) { return nil, nil }

var (
	_ ServerFilter = router{}
	_ ClientFilter = router{}
)
