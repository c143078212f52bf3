package bootstrap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unsetenv removes key for the rest of the test and restores it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

func TestFromEnv(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fileDoc := write("file.json", withServers(`"node": {"id": "from-file"}`))
	badFile := write("bad.json", `{"xds_servers": [{"server_uri": ""}]}`)
	missing := filepath.Join(dir, "missing.json")
	contentDoc := withServers(`"node": {"id": "from-content"}`)

	const unset = "\x00unset" // marks a variable that is not set at all
	tests := []struct {
		name          string
		file, content string
		wantNodeID    string
		wantErr       string // the whole error text; "" for success
		wantIs        error
	}{
		{name: "file only", file: fileDoc, content: unset, wantNodeID: "from-file"},
		{name: "content only", file: unset, content: contentDoc, wantNodeID: "from-content"},
		{name: "file wins over content", file: fileDoc, content: contentDoc, wantNodeID: "from-file"},
		{name: "file wins over bad content", file: fileDoc, content: `{`, wantNodeID: "from-file"},
		{name: "empty file variable counts as unset", file: "", content: contentDoc, wantNodeID: "from-content"},
		{
			name: "missing file does not fall back", file: missing, content: contentDoc,
			wantErr: `GRPC_XDS_BOOTSTRAP: xds bootstrap file "` + missing + `": open: no such file or directory`,
			wantIs:  fs.ErrNotExist,
		},
		{
			name: "bad file does not fall back", file: badFile, content: contentDoc,
			wantErr: `GRPC_XDS_BOOTSTRAP: xds bootstrap file "` + badFile + `": xds_servers[0].server_uri: empty`,
		},
		{
			name: "bad content", file: unset, content: `{"xds_servers": [], "node": {}}`,
			wantErr: `xds bootstrap from GRPC_XDS_BOOTSTRAP_CONFIG: xds_servers: empty`,
		},
		{
			name: "content syntax error", file: unset, content: "{\n\"xds_servers\": [,]}",
			wantErr: `xds bootstrap from GRPC_XDS_BOOTSTRAP_CONFIG: invalid JSON at line 2, column 17: invalid character ',' looking for beginning of value`,
		},
		{
			name: "neither set", file: unset, content: unset,
			wantErr: ErrNoBootstrap.Error(), wantIs: ErrNoBootstrap,
		},
		{
			name: "both empty", file: "", content: "",
			wantErr: ErrNoBootstrap.Error(), wantIs: ErrNoBootstrap,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for key, val := range map[string]string{EnvBootstrapFile: tt.file, EnvBootstrapConfig: tt.content} {
				if val == unset {
					unsetenv(t, key)
				} else {
					t.Setenv(key, val)
				}
			}
			c, err := FromEnv()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("FromEnv() error: %v", err)
				}
				if got := c.NodeID(); got != tt.wantNodeID {
					t.Errorf("NodeID() = %q, want %q", got, tt.wantNodeID)
				}
				return
			}
			if err == nil {
				t.Fatalf("FromEnv() = %+v, want error %q", c, tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("FromEnv() error\n got: %s\nwant: %s", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("FromEnv() error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

func TestErrNoBootstrapNamesBothVariables(t *testing.T) {
	msg := ErrNoBootstrap.Error()
	if !strings.Contains(msg, EnvBootstrapFile) || !strings.Contains(msg, EnvBootstrapConfig) {
		t.Errorf("ErrNoBootstrap = %q, want both variable names", msg)
	}
}
