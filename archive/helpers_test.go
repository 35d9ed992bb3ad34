package archive

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/objstore"
)

// embeddedStore returns a store on an in-process gofakes3 server with a fresh bucket.
func embeddedStore(t testing.TB) *objstore.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newStore(t, e.Endpoint, itest.Name(t, "archive"), "test", "test")
}

// newStore returns a store on endpoint (MinIO, the embedded server, or a proxy in front of
// either) and makes sure its bucket exists.
func newStore(t testing.TB, endpoint, bucket, ak, sk string) *objstore.Client {
	t.Helper()
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey, oc.PartSize, oc.Timeout = endpoint, bucket, ak, sk, objstore.MinPartSize, 5*time.Second
	st, err := objstore.New(context.Background(), oc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// proxy is a TCP forwarder that a test can switch off and on, to take S3 away from the
// archiver without disturbing other tests that share the server.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *proxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 3*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) { _, _ = io.Copy(dst, src); done <- struct{}{} }
	go cp(up, c)
	go cp(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Down closes the listener and every open connection: S3 is unreachable.
func (p *proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Up listens again on the same address.
func (p *proxy) Up(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("proxy: listen again on %s: %v", p.addr, errors.Join(err))
}
