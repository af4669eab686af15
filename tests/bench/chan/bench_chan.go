// bench_chan.go: the Go side of bench_chan.sh; the same programs as bench_chan.c.
package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

const ppN, bufN, spawnN = 1000000, 5000000, 10000

func main() {
	bestPP, bestBuf, bestSpawn := 0.0, 0.0, 1e9
	for r := 0; r < 3; r++ { // unbuffered ping-pong
		a, b := make(chan int64), make(chan int64)
		go func() {
			for i := 0; i < ppN; i++ {
				b <- <-a
			}
		}()
		t0 := time.Now()
		for i := 0; i < ppN; i++ {
			a <- int64(i)
			<-b
		}
		if rate := ppN / time.Since(t0).Seconds(); rate > bestPP {
			bestPP = rate
		}
	}
	for r := 0; r < 3; r++ { // buffered (capacity 128) throughput
		a, done := make(chan int64, 128), make(chan int64)
		go func() {
			var sum int64
			for v := range a {
				sum += v
			}
			done <- sum
		}()
		t0 := time.Now()
		for i := 0; i < bufN; i++ {
			a <- 1
		}
		close(a)
		if <-done != bufN {
			panic("sum")
		}
		if rate := bufN / time.Since(t0).Seconds(); rate > bestBuf {
			bestBuf = rate
		}
	}
	for r := 0; r < 5; r++ { // spawn and join 10,000 goroutines
		left := int64(spawnN)
		done := make(chan struct{})
		t0 := time.Now()
		for i := 0; i < spawnN; i++ {
			go func() {
				if atomic.AddInt64(&left, -1) == 0 {
					close(done)
				}
			}()
		}
		<-done
		if t := time.Since(t0).Seconds(); t < bestSpawn {
			bestSpawn = t
		}
	}
	fmt.Printf("pingpong %.0f\nbuffered %.0f\nspawn_ms %.3f\n", bestPP, bestBuf, bestSpawn*1e3)
}
