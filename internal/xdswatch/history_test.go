package xdswatch

import (
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// TestAdminConfigHistory routes two xds:/// channels, changes one's
// configuration, closes the other, and reads the histories from the admin
// port each time: a channel per argument, with its configs and what
// changed; a closed channel is gone.
func TestAdminConfigHistory(t *testing.T) {
	t.Parallel()
	cfgs := explainConfigs(t)
	cp := startControlPlane(t, cfgs...)
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--csds-addr", "127.0.0.1:0", "--stdin", "xds:///L", "xds:///L")
	l := p.event(t)
	cc := dial(t, *l.CSDS)
	list := func() []history.Channel {
		t.Helper()
		return configHistory(t, cc)
	}
	p.nextOf(t, eventConfig)
	p.nextOf(t, eventConfig)
	chans := list()
	if len(chans) != 2 {
		t.Fatalf("%d channels, want 2", len(chans))
	}
	for _, c := range chans {
		if c.Target != "xds:///L" || c.Listener != "L" || c.Capacity != history.DefaultSize || c.Recorded != 1 ||
			len(c.Entries) != 1 || c.Entries[0].Event != history.EventConfig || len(c.Entries[0].Resources) != 6 {
			t.Errorf("channel %+v", c)
		}
	}

	cfgs[1] = routes("R", routeTo{prefix: "/", cluster: "main"})
	cp.set("2", cfgs...)
	p.nextOf(t, eventConfig)
	p.nextOf(t, eventConfig)
	p.send(t, "-xds:///L")
	xdstest.WaitFor(t, testContext(t), "one channel left", func() bool { return len(list()) == 1 })
	c := list()[0]
	if c.Recorded != 2 || len(c.Entries) != 2 {
		t.Fatalf("channel %+v, want two entries", c)
	}
	var got []string
	for _, ch := range c.Entries[1].Changes {
		got = append(got, ch.Kind+" "+ch.Name+" "+ch.Op)
	}
	if want := "route #0 changed;route #1 removed;cluster canary removed"; strings.Join(got, ";") != want {
		t.Errorf("changes %q, want %q", strings.Join(got, ";"), want)
	}
	p.interrupt(t)
}
