package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// request is what the recorder keeps of one HTTP exchange.
type request struct {
	method      string
	path        string
	query       url.Values
	contentType string
	status      int
	start       time.Time
	took        time.Duration // until the response headers arrived
}

// recorder sees every request the clients send, so checks can tell how client-go
// talked to the server (watch-list or LIST, protobuf or JSON bodies), not only what
// it ended up with.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

type recordingTransport struct {
	rec  *recorder
	next http.RoundTripper
}

func (r *recorder) wrap(next http.RoundTripper) http.RoundTripper {
	return &recordingTransport{rec: r, next: next}
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	entry := request{method: req.Method, path: req.URL.Path, query: req.URL.Query(),
		contentType: req.Header.Get("Content-Type"), start: start, took: time.Since(start)}
	if resp != nil {
		entry.status = resp.StatusCode
	}
	t.rec.mu.Lock()
	t.rec.reqs = append(t.rec.reqs, entry)
	t.rec.mu.Unlock()
	return resp, err
}

// matching returns the recorded requests for which keep is true.
func (r *recorder) matching(keep func(request) bool) []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []request
	for _, q := range r.reqs {
		if keep(q) {
			out = append(out, q)
		}
	}
	return out
}

// mark returns a position; since(mark) gives the requests recorded after it.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *recorder) since(mark int) []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs[mark:]...)
}

// dump writes the request log, for diagnosing a failed run.
func (r *recorder) dump(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.reqs {
		fmt.Fprintf(w, "%s %s %s?%s %d %s %s\n", q.start.Format("15:04:05.000"), q.method, q.path,
			q.query.Encode(), q.status, q.took.Round(time.Millisecond), q.contentType)
	}
}
