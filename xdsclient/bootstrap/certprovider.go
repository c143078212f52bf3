package bootstrap

import (
	"encoding/json"
	"path/filepath"
	"time"
)

// PluginFileWatcher is the plugin_name of the certificate provider that
// reads PEM files from disk (gRFC A29).
const PluginFileWatcher = "file_watcher"

// DefaultFileWatcherRefreshInterval is how often a "file_watcher" provider
// reads its files again when its config has no "refresh_interval".
const DefaultFileWatcherRefreshInterval = 10 * time.Minute

// FileWatcherConfig is the config of a "file_watcher" certificate provider
// instance. Empty file names are not set.
type FileWatcherConfig struct {
	// CertificateFile and PrivateKeyFile are "certificate_file" and
	// "private_key_file", the identity certificate chain and its key. They
	// are set together or not at all, and live in the same directory so
	// that both can be replaced at once.
	CertificateFile, PrivateKeyFile string
	// CACertificateFile is "ca_certificate_file", the roots that peers'
	// certificates are checked against.
	CACertificateFile string
	// RefreshInterval is "refresh_interval", positive;
	// DefaultFileWatcherRefreshInterval when absent.
	RefreshInterval time.Duration
}

// parseFileWatcher validates the config of a "file_watcher" provider found
// at path, as gRPC does: at least one file, the certificate and key
// together and in one directory, and a positive refresh_interval.
func parseFileWatcher(path string, raw json.RawMessage) (*FileWatcherConfig, error) {
	fw := &FileWatcherConfig{RefreshInterval: DefaultFileWatcherRefreshInterval}
	var o object
	if k := kindOf(raw); k == kindInvalid || k == kindNull {
		o = object{path: path}
	} else {
		var err error
		if o, err = asObject(path, raw); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key string
		v   *string
	}{
		{"certificate_file", &fw.CertificateFile},
		{"private_key_file", &fw.PrivateKeyFile},
		{"ca_certificate_file", &fw.CACertificateFile},
	} {
		s, _, err := o.str(f.key)
		if err != nil {
			return nil, err
		}
		*f.v = s
	}
	switch {
	case fw.CertificateFile == "" && fw.PrivateKeyFile == "" && fw.CACertificateFile == "":
		return nil, errAt(path, "none of certificate_file, private_key_file and ca_certificate_file is set")
	case fw.CertificateFile != "" && fw.PrivateKeyFile == "":
		return nil, errAt(o.at("private_key_file"), "must be set because certificate_file is %s", quote(fw.CertificateFile))
	case fw.PrivateKeyFile != "" && fw.CertificateFile == "":
		return nil, errAt(o.at("certificate_file"), "must be set because private_key_file is %s", quote(fw.PrivateKeyFile))
	case filepath.Dir(fw.CertificateFile) != filepath.Dir(fw.PrivateKeyFile):
		return nil, errAt(o.at("private_key_file"), "%s is not in the directory of certificate_file %s", quote(fw.PrivateKeyFile), quote(fw.CertificateFile))
	}
	if r, ok := o.get("refresh_interval"); ok {
		d, err := parseDuration(o.at("refresh_interval"), r)
		if err != nil {
			return nil, err
		}
		fw.RefreshInterval = d
	}
	return fw, nil
}
