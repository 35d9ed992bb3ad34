package api

import (
	"net"
	"sync"
)

// maxCoalesce bounds what one connection buffers before it writes through: a list of 1,000
// items is about 100 KB.
const maxCoalesce = 256 << 10

// coalescingListener wraps accepted connections in coalescingConn.
type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &coalescingConn{Conn: c}, nil
}

// coalescingConn sends one response in one write system call. net/http writes a response
// through a 4 KiB buffer, so a 10 KB list leaves as two or three writes, each a separate TCP
// send; profiles under wrk showed writes at a third of the server's CPU. This conn keeps what
// is written and sends it all when the server next reads from the connection, which net/http
// does as soon as a response is complete (to read the next request), or when the conn closes.
//
// The cost: a handler that flushes part of a response and then waits would not see the part
// leave until it finishes. The one handler that does, GET /v1/trending/stream, turns the
// coalescing off for its connection (writeThrough): every flush of an event then leaves at
// once.
type coalescingConn struct {
	net.Conn
	mu      sync.Mutex // Read (flush) and Write come from different goroutines in net/http
	buf     []byte
	err     error // the first failed flush; reported by every later Write and Read
	through bool  // write through: the connection carries a stream
}

// writeThrough sends what is kept and every later write at once.
func (c *coalescingConn) writeThrough() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.through = true
	c.flushLocked()
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.through {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		return c.Conn.Write(p)
	}
	if len(c.buf)+len(p) > maxCoalesce {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > maxCoalesce {
			return c.Conn.Write(p)
		}
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *coalescingConn) Read(p []byte) (int, error) {
	// net/http reads one byte in the background while a handler runs (to notice a
	// pipelined request or a closed connection); flushing then would send a response
	// half-written whenever that goroutine is scheduled late. The read of the next request,
	// through net/http's 4 KiB reader, is what flushes.
	if len(p) > 1 {
		c.mu.Lock()
		err := c.flushLocked()
		c.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

func (c *coalescingConn) Close() error {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
	return c.Conn.Close()
}

func (c *coalescingConn) flushLocked() error {
	if c.err != nil || len(c.buf) == 0 {
		return c.err
	}
	_, c.err = c.Conn.Write(c.buf)
	if cap(c.buf) > 64<<10 {
		c.buf = nil // do not pin a large buffer on an idle connection
	} else {
		c.buf = c.buf[:0]
	}
	return c.err
}
