package master

import (
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A worker's address is exactly http(s)://host:port of its registration:
// nothing a request could be steered elsewhere with.
func TestWorkerAddressIsExactlyItsHostAndPort(t *testing.T) {
	reg := func(host string, port int, addr string) wire.RegisterWorker {
		return wire.RegisterWorker{ID: "w1", Host: host, Port: port, Cores: 1, MemoryMB: 1, Address: addr}
	}
	for _, ok := range []wire.RegisterWorker{
		reg("127.0.0.1", 9001, "http://127.0.0.1:9001"),
		reg("10.0.0.7", 443, "https://10.0.0.7:443"),
		reg("::1", 9001, "https://[::1]:9001"),
		reg("node-7.example", 8081, "http://node-7.example:8081"),
	} {
		if err := validateRegistration(ok); err != nil {
			t.Errorf("%s refused: %v", ok.Address, err)
		}
	}
	for _, bad := range []string{
		"http://127.0.0.1:9002",              // another port
		"http://127.0.0.2:9001",              // another host
		"http://127.0.0.1:9001/",             // a path
		"http://127.0.0.1:9001/v1/x",         // a path
		"http://127.0.0.1:9001?x=1",          // a query
		"http://127.0.0.1:9001#f",            // a fragment
		"http://user:pw@127.0.0.1:9001",      // userinfo
		"http://evil.example@127.0.0.1:9001", // userinfo
		"ftp://127.0.0.1:9001",
		"127.0.0.1:9001",
		"http://127.0.0.1",
		"",
	} {
		if err := validateRegistration(reg("127.0.0.1", 9001, bad)); err == nil {
			t.Errorf("address %q accepted", bad)
		}
	}
}
