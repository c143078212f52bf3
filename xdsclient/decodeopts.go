package xdsclient

import "github.com/xdslens/xdslens/xdsclient/xdsresource"

// decodeOptions returns what the decoders need to know about resources
// that ch's server sent: the server and the bootstrap's certificate
// provider instances, which TLS settings must name.
func (ch *channel) decodeOptions() xdsresource.DecodeOptions {
	return xdsresource.DecodeOptions{
		ServerURI:              ch.uri,
		TrustedServer:          ch.server.TrustedXDSServer,
		HasCertificateProvider: ch.c.hasCertificateProvider,
	}
}

// hasCertificateProvider reports whether the bootstrap has the certificate
// provider instance name. The bootstrap never changes, so no lock is needed.
func (c *Client) hasCertificateProvider(name string) bool {
	_, ok := c.cfg.CertificateProviders[name]
	return ok
}
