package xdsserver

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"
)

// BenchmarkRoute measures the routing of one RPC by a chain's compiled
// route configuration: the virtual host by the RPC's :authority, then the
// first route whose matchers match, as the interceptor does per RPC.
func BenchmarkRoute(b *testing.B) {
	serve := routeconfig.Action{Kind: routeconfig.ActionNonForwarding}
	many := routeconfig.VirtualHost{Name: "many", Domains: []string{"*"}}
	for i := range 1000 {
		many.Routes = append(many.Routes, routeconfig.Route{PathMatch: routeconfig.PathExact, Path: fmt.Sprintf("/svc.S%d/Method", i), Action: serve})
	}
	hosted := []routeconfig.VirtualHost{
		{Name: "a", Domains: []string{"a.example.com"}, Routes: []routeconfig.Route{{PathMatch: routeconfig.PathPrefix, Prefix: "/", Action: serve}}},
		{Name: "b", Domains: []string{"b.example.com", "*.b.example.com"}},
		{Name: "default", Domains: []string{"*"}, Routes: []routeconfig.Route{{PathMatch: routeconfig.PathPrefix, Prefix: "/", Action: serve}}},
	}
	for i := range 19 {
		hosted[1].Routes = append(hosted[1].Routes, routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: fmt.Sprintf("/svc.S%d/", i), Action: serve})
	}
	hosted[1].Routes = append(hosted[1].Routes, routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: "/SVC.TARGET/", CaseInsensitive: true,
		Headers: []matcher.Header{{Name: "x-tier", Kind: matcher.Exact, Value: "gold"}}, Action: serve})
	for _, bc := range []struct {
		name   string
		vhosts []routeconfig.VirtualHost
		md     metadata.MD
		method string
	}{
		{"one route", []routeconfig.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []routeconfig.Route{{PathMatch: routeconfig.PathPrefix, Prefix: "/", Action: serve}}}}, nil, "/svc.S/Method"},
		{"authority and header, 20th route", hosted, metadata.MD{":authority": {"x.b.example.com"}, "x-tier": {"gold"}}, "/svc.Target/Method"},
		{"last of 1000 paths", []routeconfig.VirtualHost{many}, nil, "/svc.S999/Method"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newChain(&serverlistener.FilterChain{Name: "c"}, false)
			t := compileTable(c, &routeconfig.Config{VirtualHosts: bc.vhosts}, "bench", httpfilter.ServerEnv{})
			ctx := metadata.NewIncomingContext(context.Background(), bc.md)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.route(ctx, bc.method); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
