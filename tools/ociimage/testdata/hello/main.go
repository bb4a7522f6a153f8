// Command hello is the binary the image test packs when no real images are given.
package main

import "fmt"

func main() { fmt.Println("hello") }
