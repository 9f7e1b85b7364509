package sock

import (
	"errors"
	"sync"
	"syscall"
)

// poller watches the sockets of the parked Conns of one hub (Park): one
// epoll set, and one goroutine while any Conn is parked, in place of a
// goroutine and its stack per idle connection. It hands a socket that has
// bytes (or the end) back to its Conn's wake, on a fresh goroutine.
//
// The Go runtime's own poller still watches each socket (edge-triggered);
// a socket may be in several epoll sets, so this set, level-triggered and
// one-shot, sees what is waiting whatever the runtime saw.
type poller struct {
	mu      sync.Mutex
	epfd    int             // -1: none (no loop runs)
	parked  map[int32]*Conn // by descriptor: a descriptor is in the set for one Conn at a time
	testErr error           // tests: the next add fails with it
}

// pollIdle is how long the loop waits with no event before it checks
// whether any Conn is still parked, and ends if none is.
const pollIdle = 1000 // ms

func newPoller() *poller { return &poller{epfd: -1} }

// add puts c's socket in the set, starting the set and its loop if none
// runs. c.in.mu held.
func (p *poller) add(c *Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.testErr != nil {
		return false
	}
	if p.epfd < 0 {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return false
		}
		p.epfd = fd
		if p.parked == nil {
			p.parked = make(map[int32]*Conn)
		}
		go p.loop(fd)
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
func (p *poller) loop(epfd int) {
	var evs [64]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(epfd, evs[:], pollIdle)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			p.fail()
			return
		}
		for _, ev := range evs[:max(n, 0)] {
			p.mu.Lock()
			c := p.parked[ev.Fd]
			p.mu.Unlock()
			if c != nil {
				c.unpark()
			}
		}
		if n != 0 {
			continue
		}
		p.mu.Lock()
		if len(p.parked) == 0 {
			syscall.Close(epfd)
			p.epfd = -1
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// fail wakes every parked Conn when the set cannot be waited on: each
// then waits on a goroutine of its own.
func (p *poller) fail() {
	p.mu.Lock()
	cs := make([]*Conn, 0, len(p.parked))
	for _, c := range p.parked {
		cs = append(cs, c)
	}
	syscall.Close(p.epfd)
	p.epfd = -1
	p.mu.Unlock()
	for _, c := range cs {
		c.unpark()
	}
}
