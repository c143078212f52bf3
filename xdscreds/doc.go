// Package xdscreds provides the transport credentials of xdslens channels
// (gRFC A29's xDS channel credentials): each connection to an endpoint of
// a cluster whose transport_socket asks for TLS is made with TLS, or
// mutual TLS, as that cluster's UpstreamTlsContext says, with certificates
// and roots from the certificate providers of the bootstrap; every other
// connection is made by the fallback credentials the user gives.
//
//	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
//	...
//	conn, err := grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool), grpc.WithTransportCredentials(creds))...)
//
// The cluster policy of the channel tells the credentials the settings of
// each address, in the address's attributes; an address without them is a
// plaintext cluster's, or a channel's that xdslens does not route, and
// takes the fallback credentials. A cluster that asks for TLS is never
// reached otherwise: when its settings cannot be applied (no key material,
// a peer that does not speak TLS, a chain that does not verify, SANs that
// match nothing) the handshake fails, with a *HandshakeError naming the
// cluster, the peer and the reason, and no key material. The fallback
// credentials are not used on error (gRFC A29).
//
// Key material is read from the providers at each handshake: when a
// file_watcher provider has read rotated files (every refresh_interval),
// the next connection uses them, and the connections already made stay up.
// The SAN matchers are not compiled at a handshake: the cluster policy
// compiles them when it takes a new config of the cluster (its Cluster or
// its endpoints changed), and the handshakes with all the cluster's
// endpoints, concurrent ones included, share them (package
// internal/sanmatch); a new Cluster's handshakes use its own. A safe_regex
// that is not valid never gets this far: the Cluster is NACKed.
//
// What is applied, and after whom where gRPC's implementations differ:
//
//	| setting | applied | after |
//	|---|---|---|
//	| roots: validation context ca_certificate_provider_instance (or a deprecated field) | the server's chain must verify against the instance's roots, with the serverAuth usage; a provider that gives no roots fails the handshake (the system's roots are never taken in their place) | A29 |
//	| roots: system_root_certs, when no instance is named | the chain must verify against the system's roots (on Linux, SSL_CERT_FILE and SSL_CERT_DIR as crypto/x509 reads them) | A82; C-core (grpc-go only with GRPC_EXPERIMENTAL_XDS_SYSTEM_ROOT_CERTS=true) |
//	| identity: tls_certificate_provider_instance | the certificate chain and key shown to a server that asks (mutual TLS); none shown without it | A29 |
//	| match_subject_alt_names | none: any server whose chain verifies; else accepted when one URI, IP or DNS SAN of the leaf certificate matches one matcher; an empty prefix, suffix or contains matches every SAN, an empty exact none | A29; C-core (grpc-go rejects an empty prefix, suffix or contains) |
//	| exact matcher on a DNS SAN | DNS rules: without case, trailing dots ignored, a SAN "*.example.com" matches one label in place of "*", no empty name or leading dot | C-core and grpc-go (C-core's leading-dot rule) |
//	| exact on URI and IP SANs; prefix, suffix, contains and safe_regex on any SAN | string comparison of the SAN as the certificate spells it (IP SANs as inet_ntop writes them); ignore_case compares without case; safe_regex matches the whole SAN, with case | grpc-go (C-core applies the DNS rules to every SAN under an exact matcher, a stand-in its source says is for a SAN type its TLS layer does not report) |
//	| email SANs | never matched | C-core (grpc-go matches them) |
//	| sni, auto_host_sni | the server name sent: the endpoint's hostname without its port when auto_host_sni is set and the endpoint has one; else sni; else none (an IP address is never sent) | A101 with its rollout switch on; C-core (grpc-go only with GRPC_EXPERIMENTAL_XDS_SNI=true) |
//	| auto_sni_san_validation | in place of match_subject_alt_names: a DNS SAN must match the name sent, by the DNS rules; with no name sent, the handshake fails | A101; C-core (grpc-go falls back to match_subject_alt_names when no name is sent, and both match DNS SANs only, where the gRFC names URI and IP SANs too) |
//	| ALPN | "h2" is offered and required | C-core and grpc-go |
//	| no hostname check | the channel's authority is neither sent nor checked: the SAN matchers stand for it | A29 |
//	| the peer's credentials.TLSInfo.SPIFFEID | the leaf certificate's only URI SAN, when it begins with "spiffe://" (with case), is at most 2048 bytes, has a trust domain of at most 255 bytes and a path whose first segment is not empty; nil otherwise; the rules xDS-enabled servers apply (package internal/certsan) | C-core (grpc-go's TLS credentials read the URI as crypto/x509 re-encodes it, so "SPIFFE://" counts, refuse user info and an empty trust domain, and accept the path "/") |
//
// The credentials make client handshakes only; ServerHandshake fails.
package xdscreds
