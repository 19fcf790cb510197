// Command etcd is etcd's own server entry point (go.etcd.io/etcd/server/v3/etcdmain),
// built at the version pinned in go.mod so the local control plane needs no Debian etcd.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
