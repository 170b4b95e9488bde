// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3's etcdmain),
// built from the Go module proxy for the control-plane tests (envtest). It
// lives in a module of its own so that etcd's dependency tree never meets the
// library's or the test modules'.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
