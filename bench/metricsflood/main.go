// Command metricsflood is the /metrics check of bench/metrics.sh: it sends
// N requests for a gateway's /metrics, C at once, from a client address the
// gateway does not trust (X-Forwarded-For through its trusted loopback
// proxy), and prints the gateway's CPU time spent meanwhile, per request.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpu is the process's user + system time (/proc/<pid>/stat, in ticks of
// 10 ms).
func cpu(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond, nil
}

func main() {
	url := flag.String("url", "", "the gateway's http://host:port")
	pid := flag.Int("pid", 0, "the gateway's process id")
	n := flag.Int("n", 3000, "requests")
	c := flag.Int("c", 8, "requests at once")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *c}}
	before, err := cpu(*pid)
	if err != nil {
		log.Fatal(err)
	}
	todo := make(chan struct{}, *n)
	for range *n {
		todo <- struct{}{}
	}
	close(todo)
	start := time.Now()
	var wg sync.WaitGroup
	for range *c {
		wg.Go(func() {
			for range todo {
				req, _ := http.NewRequest(http.MethodGet, *url+"/metrics", nil)
				req.Header.Set("X-Forwarded-For", "198.51.100.7")
				resp, err := client.Do(req)
				if err != nil {
					log.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					log.Fatalf("/metrics: %s", resp.Status)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	after, err := cpu(*pid)
	if err != nil {
		log.Fatal(err)
	}
	d := after - before
	fmt.Printf("%d requests in %s: gateway CPU %s, %.0f µs a request\n", *n, took.Round(time.Millisecond), d, float64(d.Microseconds())/float64(*n))
}
