package sparkcmp

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Where every process of the comparison listens: fixed addresses of
// 127.0.0.100-140 and fixed ports of 18000-18999, clear of the other
// runs sharing the machine (berth's tests take 127.0.0.1-69 and free
// ports; bench/failover 127.0.0.1-3 and .21 up). Each daemon has an
// address of its own, so the ports repeat from one address to the next,
// and a restarted daemon comes back where it was.
const (
	zkIP   = "127.0.0.100"
	zkPort = 18100

	sparkMasterFirstIP = 101 // Spark's Masters: 127.0.0.101, .102
	sparkMasterPort    = 18101
	sparkMasterUIPort  = 18102
	sparkRESTPort      = 18103 // the Master's REST submission server (on by default; 6066 otherwise)

	sparkWorkerFirstIP = 111 // Spark's Workers: 127.0.0.111 ...
	sparkWorkerPort    = 18111
	sparkWorkerUIPort  = 18112

	berthMasterFirstIP = 121 // berth's masters: 127.0.0.121, .122, .123
	berthAPIPort       = 18121
	berthRaftPort      = 18122

	berthWorkerFirstIP = 131 // berth's workers: 127.0.0.131 ...
	berthWorkerPort    = 18131
	// berthPortRanges is where the workers' --port-range blocks start, 50
	// ports each (nothing here asks for a port by label; the flag only
	// keeps the default blocks of 20000-32000, which other runs use, out).
	berthPortRanges = 18500
	berthPortBlock  = 50

	// driverIP is where every spark-submit's driver binds (its ports are
	// the kernel's, ephemeral): both systems' executors connect to it.
	driverIP = "127.0.0.140"

	maxWorkers   = 8 // .111-.118 and .131-.138
	sparkMasters = 2 // an active Master and a standby, as Spark's HA docs have it
	berthMasters = 3 // the smallest Raft cluster that survives a loss
)

func loopback(last int) string { return fmt.Sprintf("127.0.0.%d", last) }

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// fixedAddresses are every address:port a daemon of the comparison binds
// for n workers.
func fixedAddresses(workers int) []string {
	out := []string{hostPort(zkIP, zkPort)}
	for i := range sparkMasters {
		ip := loopback(sparkMasterFirstIP + i)
		out = append(out, hostPort(ip, sparkMasterPort), hostPort(ip, sparkMasterUIPort), hostPort(ip, sparkRESTPort))
	}
	for i := range berthMasters {
		ip := loopback(berthMasterFirstIP + i)
		out = append(out, hostPort(ip, berthAPIPort), hostPort(ip, berthRaftPort))
	}
	for i := range workers {
		out = append(out,
			hostPort(loopback(sparkWorkerFirstIP+i), sparkWorkerPort), hostPort(loopback(sparkWorkerFirstIP+i), sparkWorkerUIPort),
			hostPort(loopback(berthWorkerFirstIP+i), berthWorkerPort))
	}
	return out
}

// checkAddressesFree fails, naming them, if any of the addresses is taken:
// another comparison running, or a daemon left over from one.
func checkAddressesFree(addrs []string) error {
	var errs []error
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is taken (another spark-vs-standalone running, or a daemon left from one?): %w", a, err))
			continue
		}
		l.Close()
	}
	return errors.Join(errs...)
}
