package client_test

import (
	"crypto/tls"
	"net/http"
	"sync"
	"testing"

	"github.com/wsgateway/wsgateway/client"
)

// Over wss:// the Client's own HTTP client trusts what Options.TLSConfig
// says (here a private CA: the test server's certificate) and still
// batches its frames, under TLS; without it the certificate is refused.
// TLSConfig with an HTTPClient of one's own is an error.
func TestDialTLS(t *testing.T) {
	t.Parallel()
	f, roots := newFakeTLS(t, nil)
	if c, err := client.Dial(testCtx(t), f.URL, "t", nil); err == nil {
		c.Close()
		t.Fatal("Dial trusted a certificate no root signed")
	}
	c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{TLSConfig: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for i := range 64 { // pipelined: frames gather in the batchConn under TLS
		wg.Go(func() {
			a, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Member: "m", Delta: client.Int(int64(i))})
			if err != nil || a.Score != int64(i) {
				t.Errorf("score %d: %+v, %v", i, a, err)
			}
		})
	}
	wg.Wait()
	if _, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{HTTPClient: http.DefaultClient, TLSConfig: &tls.Config{RootCAs: roots}}); err == nil {
		t.Fatal("Dial took TLSConfig together with an HTTPClient")
	}
}
