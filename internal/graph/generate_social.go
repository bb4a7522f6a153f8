package graph

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
)

// Social generates a graph shaped like social and commerce data: users with
// a power-law number of friends (a few hubs with thousands), their posts,
// comments on the posts and products that users like and posts mention.
// Friendship goes both ways (cycles), a comment refers back to its post and
// to its author (more cycles), popular products are shared by many objects,
// and a few refs point at deleted objects. Every list of refs is ordered most
// recent first, so an object's first refs are the ones a feed shows.
//
// Objects and their refs, in this order:
//
//	User    "posts" (Post), "friends" (User), "likes" (Product)
//	Post    "author" (User), "comments" (Comment), "product" (Product, 0 or 1)
//	Comment "post" (Post), "author" (User, a friend of the post's author)
//	Product "seller" (User), "similar" (Product)
//
// The zero value of each knob but Users has a documented default.
type Social struct {
	Users int
	// MinFriends is the smallest friend count drawn; zero = 2.
	MinFriends int
	// MaxFriends caps a user's friends (and a post's comments); zero = 3000.
	// It is also capped by Users-1.
	MaxFriends int
	// FriendAlpha is the Pareto exponent of friend counts: smaller makes
	// heavier hubs; zero = 1.1.
	FriendAlpha float64
	// PostsPerUser is the average number of posts of a user; zero = 3.
	PostsPerUser int
	// CommentsPerPost is the average of a power-law number of comments per
	// post; zero = 2.
	CommentsPerPost int
	// Products is the number of products; zero = Users/5 (at least 1).
	Products int
	// DanglingRate is the chance that a friend or like ref is followed by a
	// ref to a deleted object; zero = none.
	DanglingRate float64
	PayloadBytes int
	Seed         uint64
}

// Types and ref fields of Social.
const (
	SocialUser    = "User"
	SocialPost    = "Post"
	SocialComment = "Comment"
	SocialProduct = "Product"

	FieldPosts    = "posts"
	FieldFriends  = "friends"
	FieldLikes    = "likes"
	FieldAuthor   = "author"
	FieldComments = "comments"
	FieldProduct  = "product"
	FieldPost     = "post"
	FieldSeller   = "seller"
	FieldSimilar  = "similar"
)

// UserID, PostID, CommentID and ProductID name the i-th object of a type.
func UserID(i int) string    { return "user-" + strconv.Itoa(i) }
func PostID(i int) string    { return "post-" + strconv.Itoa(i) }
func CommentID(i int) string { return "comment-" + strconv.Itoa(i) }
func ProductID(i int) string { return "product-" + strconv.Itoa(i) }

// DeletedPrefix starts the id of every dangling ref Social makes.
const DeletedPrefix = "deleted-"

func (g Social) withDefaults() Social {
	if g.MinFriends == 0 {
		g.MinFriends = 2
	}
	if g.MaxFriends == 0 {
		g.MaxFriends = 3000
	}
	g.MaxFriends = min(g.MaxFriends, g.Users-1)
	if g.FriendAlpha == 0 {
		g.FriendAlpha = 1.1
	}
	if g.PostsPerUser == 0 {
		g.PostsPerUser = 3
	}
	if g.CommentsPerPost == 0 {
		g.CommentsPerPost = 2
	}
	if g.Products == 0 {
		g.Products = max(g.Users/5, 1)
	}
	return g
}

// Approx is about the number of objects Generate emits, for progress
// reports: the counts of posts and comments are random.
func (g Social) Approx() int {
	if g.Users <= 0 {
		return 0
	}
	g = g.withDefaults()
	return g.Users*(1+g.PostsPerUser*(1+g.CommentsPerPost)) + g.Products
}

// social is a generated graph held as index lists; objects are built from it
// one at a time as they are emitted.
type social struct {
	g       Social
	friends [][]int32 // per user, oldest friendship first
	postEnd []int32   // user u's posts are postEnd[u-1] (or 0) .. postEnd[u]-1
	postTag []int32   // per post: product index, or -1
	comEnd  []int32   // post p's comments are comEnd[p-1] (or 0) .. comEnd[p]-1
	comBy   []int32   // per comment: author
	likes   [][]int32 // per user: products
	seller  []int32   // per product: user
	similar [][]int32 // per product: products
}

// Generate emits users, then posts, products and comments, each in id order.
func (g Social) Generate(emit EmitFunc) error {
	if g.Users <= 0 {
		return nil
	}
	g = g.withDefaults()
	rng := rand.New(rand.NewPCG(g.Seed, 0x736f6369616c))
	s := &social{g: g}
	s.makeFriends(rng)
	s.makeContent(rng)
	dangling := rand.New(rand.NewPCG(g.Seed, 0x64616e67))
	for u := range g.Users {
		if err := emit(s.user(rng, dangling, u)); err != nil {
			return err
		}
	}
	for p := range s.postTag {
		if err := emit(s.post(rng, p)); err != nil {
			return err
		}
	}
	for i := range g.Products {
		if err := emit(s.product(rng, i)); err != nil {
			return err
		}
	}
	for c := range s.comBy {
		if err := emit(s.comment(rng, c)); err != nil {
			return err
		}
	}
	return nil
}

// friendTargets returns the friend count drawn for each user (before pairs
// that repeat or would befriend oneself are dropped): Pareto quantiles spread
// evenly over (0, 1) and shuffled, so that the number of hubs depends on
// Users and not on the seed.
func (g Social) friendTargets(rng *rand.Rand) []int {
	w := make([]int, g.Users)
	for i, rank := range rng.Perm(g.Users) {
		q := (float64(rank) + 0.5) / float64(g.Users)
		d := float64(g.MinFriends) * math.Pow(q, -1/g.FriendAlpha)
		w[i] = int(min(d, float64(g.MaxFriends)))
	}
	return w
}

// makeFriends makes friendships: each user starts about half of their drawn
// count, each with a partner drawn in proportion to drawn counts (so hubs
// befriend hubs), drawing again when the pair exists already or a side is
// full. The shuffled order of the pairs is the order they were made in.
func (s *social) makeFriends(rng *rand.Rand) {
	targets := s.g.friendTargets(rng)
	var stubs []int32
	for u, w := range targets {
		for range w {
			stubs = append(stubs, int32(u))
		}
	}
	deg := make([]int, s.g.Users)
	seen := make(map[uint64]bool, len(stubs)/2)
	var pairs [][2]int32
	for _, u := range rng.Perm(s.g.Users) {
		starts := targets[u]/2 + rng.IntN(targets[u]%2+1)
		for range starts {
			for range maxDraws {
				v := int(stubs[rng.IntN(len(stubs))])
				key := uint64(min(u, v))<<32 | uint64(max(u, v))
				if v == u || seen[key] || deg[u] >= s.g.MaxFriends || deg[v] >= s.g.MaxFriends {
					continue
				}
				seen[key] = true
				deg[u]++
				deg[v]++
				pairs = append(pairs, [2]int32{int32(u), int32(v)})
				break
			}
		}
	}
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	s.friends = make([][]int32, s.g.Users)
	for _, p := range pairs {
		s.friends[p[0]] = append(s.friends[p[0]], p[1])
		s.friends[p[1]] = append(s.friends[p[1]], p[0])
	}
}

// maxDraws bounds the partners drawn for one friendship before it is given
// up, so that a full graph does not loop.
const maxDraws = 20

// makeContent draws posts, comments and products. Product popularity is
// Zipf-distributed, so popular products are children shared by many objects.
func (s *social) makeContent(rng *rand.Rand) {
	g := s.g
	products := rand.NewZipf(rng, 1.2, 1, uint64(g.Products-1))
	s.postEnd = make([]int32, g.Users)
	s.likes = make([][]int32, g.Users)
	n := 0
	for u := range g.Users {
		n += rng.IntN(2*g.PostsPerUser + 1)
		s.postEnd[u] = int32(n)
		for range rng.IntN(4) {
			s.likes[u] = append(s.likes[u], int32(products.Uint64()))
		}
	}
	s.postTag = make([]int32, n)
	s.comEnd = make([]int32, n)
	// Comments per post: Lomax (Pareto II) with shape 1.5, whose mean is
	// twice its scale.
	scale := float64(g.CommentsPerPost) / 2
	c := 0
	for p := range n {
		s.postTag[p] = -1
		if rng.IntN(3) == 0 {
			s.postTag[p] = int32(products.Uint64())
		}
		k := int(scale * (math.Pow(1-rng.Float64(), -1/1.5) - 1))
		c += min(k, g.MaxFriends)
		s.comEnd[p] = int32(c)
	}
	s.comBy = make([]int32, c)
	for p := range n {
		author := s.postAuthor(p)
		fs := s.friends[author]
		for i := s.start(s.comEnd, p); i < int(s.comEnd[p]); i++ {
			if len(fs) > 0 {
				s.comBy[i] = fs[rng.IntN(len(fs))]
			} else {
				s.comBy[i] = int32(author)
			}
		}
	}
	s.seller = make([]int32, g.Products)
	s.similar = make([][]int32, g.Products)
	for i := range g.Products {
		s.seller[i] = int32(rng.IntN(g.Users))
		for range 3 {
			if j := int32(products.Uint64()); int(j) != i {
				s.similar[i] = append(s.similar[i], j)
			}
		}
	}
}

// start is where the range of index i begins in a list of range ends.
func (s *social) start(ends []int32, i int) int {
	if i == 0 {
		return 0
	}
	return int(ends[i-1])
}

// postAuthor is the user whose range of posts holds post p.
func (s *social) postAuthor(p int) int { return rangeOf(s.postEnd, p) }

// postOf is the post whose range of comments holds comment c.
func (s *social) postOf(c int) int { return rangeOf(s.comEnd, c) }

// rangeOf is the index of the first range, in a list of range ends, that
// ends after i: the range holding i.
func rangeOf(ends []int32, i int) int {
	return sort.Search(len(ends), func(m int) bool { return int(ends[m]) > i })
}

func (s *social) object(rng *rand.Rand, id, typ string) *Object {
	return &Object{ID: id, Version: 1, Type: typ, Payload: payload(rng, s.g.PayloadBytes)}
}

func (s *social) user(rng, dangling *rand.Rand, u int) *Object {
	o := s.object(rng, UserID(u), SocialUser)
	for p := int(s.postEnd[u]) - 1; p >= s.start(s.postEnd, u); p-- {
		o.Refs = append(o.Refs, Ref{Field: FieldPosts, ID: PostID(p)})
	}
	fs := s.friends[u]
	for i := len(fs) - 1; i >= 0; i-- {
		o.Refs = append(o.Refs, Ref{Field: FieldFriends, ID: UserID(int(fs[i]))})
		o.Refs = s.maybeDangle(dangling, o.Refs, FieldFriends, SocialUser)
	}
	for _, l := range s.likes[u] {
		o.Refs = append(o.Refs, Ref{Field: FieldLikes, ID: ProductID(int(l))})
		o.Refs = s.maybeDangle(dangling, o.Refs, FieldLikes, SocialProduct)
	}
	return o
}

// maybeDangle appends, with probability DanglingRate, a ref to a deleted
// object of type typ.
func (s *social) maybeDangle(rng *rand.Rand, refs []Ref, field, typ string) []Ref {
	if s.g.DanglingRate <= 0 || rng.Float64() >= s.g.DanglingRate {
		return refs
	}
	return append(refs, Ref{Field: field, ID: DeletedPrefix + typ + "-" + strconv.Itoa(rng.IntN(s.g.Users))})
}

func (s *social) post(rng *rand.Rand, p int) *Object {
	o := s.object(rng, PostID(p), SocialPost)
	o.Refs = append(o.Refs, Ref{Field: FieldAuthor, ID: UserID(s.postAuthor(p))})
	for c := int(s.comEnd[p]) - 1; c >= s.start(s.comEnd, p); c-- {
		o.Refs = append(o.Refs, Ref{Field: FieldComments, ID: CommentID(c)})
	}
	if t := s.postTag[p]; t >= 0 {
		o.Refs = append(o.Refs, Ref{Field: FieldProduct, ID: ProductID(int(t))})
	}
	return o
}

func (s *social) product(rng *rand.Rand, i int) *Object {
	o := s.object(rng, ProductID(i), SocialProduct)
	o.Refs = append(o.Refs, Ref{Field: FieldSeller, ID: UserID(int(s.seller[i]))})
	for _, j := range s.similar[i] {
		o.Refs = append(o.Refs, Ref{Field: FieldSimilar, ID: ProductID(int(j))})
	}
	return o
}

func (s *social) comment(rng *rand.Rand, c int) *Object {
	o := s.object(rng, CommentID(c), SocialComment)
	p := s.postOf(c)
	o.Refs = append(o.Refs, Ref{Field: FieldPost, ID: PostID(p)}, Ref{Field: FieldAuthor, ID: UserID(int(s.comBy[c]))})
	return o
}
