// Package xdsconfig is the dependency manager of gRFC A74: for one
// listener name it watches, through an xdsclient.Client, everything a gRPC
// channel needs to route RPCs (the Listener, its RouteConfiguration, the
// clusters the routes of the virtual host for the channel's authority name,
// the clusters that aggregate clusters expand to, and their endpoints), and
// delivers it as one immutable Config whenever every resource it needs has
// been heard from, and again on every change.
package xdsconfig
