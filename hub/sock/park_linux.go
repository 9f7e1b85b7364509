package sock

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// poller watches the sockets of the parked Conns of one hub (Park): one
// epoll set, and one goroutine while any Conn is parked, in place of a
// goroutine and its stack per idle connection. It hands a socket that has
// bytes (or the end) back to its Conn's wake, on a fresh goroutine.
//
// The Go runtime's own poller still watches each socket (edge-triggered);
// a socket may be in several epoll sets, so this set, level-triggered and
// one-shot, sees what is waiting whatever the runtime saw. The set's own
// descriptor is in the runtime's poller too: the loop waits for it as a
// goroutine waits for a socket, so a wake costs no thread of its own and
// comes with the runtime's other network wakes.
type poller struct {
	mu     sync.Mutex
	epfd   int             // -1: none (no loop runs)
	parked map[int32]*Conn // by descriptor: a descriptor is in the set for one Conn at a time
}

// pollIdle is how long the loop waits with no event before it checks
// whether any Conn is still parked, and ends if none is.
const pollIdle = time.Second

func newPoller() *poller { return &poller{epfd: -1} }

// add puts c's socket in the set, starting the set and its loop if none
// runs. c.in.mu held.
func (p *poller) add(c *Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.epfd < 0 {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return false
		}
		if err := syscall.SetNonblock(fd, true); err != nil {
			syscall.Close(fd)
			return false
		}
		f := os.NewFile(uintptr(fd), "sock-poller") // non-blocking: in the runtime's poller
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return false
		}
		p.epfd = fd
		if p.parked == nil {
			p.parked = make(map[int32]*Conn)
		}
		go p.loop(f, rc)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: c.fd}
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(c.fd), &ev); err != nil {
		return false
	}
	p.parked[c.fd] = c
	return true
}

// remove takes c's socket out of the set; its descriptor is still open.
// c.in.mu held.
func (p *poller) remove(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parked[c.fd] == c {
		delete(p.parked, c.fd)
	}
	if p.epfd >= 0 {
		syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(c.fd), nil) // ENOENT after the one-shot: harmless
	}
}

// loop hands each parked Conn whose socket is ready to its wake, until
// no Conn is parked for pollIdle; then it closes the set (the next Park
// makes another).
func (p *poller) loop(f *os.File, rc syscall.RawConn) {
	var (
		evs   [64]syscall.EpollEvent
		ready = make([]*Conn, 0, len(evs))
		n     int
		werr  error
	)
	wait := func(fd uintptr) bool {
		n, werr = syscall.EpollWait(int(fd), evs[:], 0)
		return n != 0 || (werr != nil && !errors.Is(werr, syscall.EINTR))
	}
	for {
		f.SetReadDeadline(time.Now().Add(pollIdle))
		err := rc.Read(wait)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.mu.Lock()
			if len(p.parked) == 0 {
				p.epfd = -1
				p.mu.Unlock()
				f.Close()
				return
			}
			p.mu.Unlock()
			continue
		case err != nil || werr != nil:
			p.fail(f)
			return
		}
		// One lock per wait, not per event: a ping round wakes many at once.
		ready = ready[:0]
		p.mu.Lock()
		for _, ev := range evs[:n] {
			if c := p.parked[ev.Fd]; c != nil {
				ready = append(ready, c)
			}
		}
		p.mu.Unlock()
		for _, c := range ready {
			c.unpark()
		}
	}
}

// fail wakes every parked Conn when the set cannot be waited on: each
// then waits on a goroutine of its own.
func (p *poller) fail(f *os.File) {
	p.mu.Lock()
	cs := make([]*Conn, 0, len(p.parked))
	for _, c := range p.parked {
		cs = append(cs, c)
	}
	p.epfd = -1
	p.mu.Unlock()
	f.Close()
	for _, c := range cs {
		c.unpark()
	}
}
