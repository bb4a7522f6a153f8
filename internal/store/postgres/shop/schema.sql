-- A small shop: customers place orders of line items, each of a product.
CREATE TABLE customers (
	id bigint PRIMARY KEY,
	name text NOT NULL,
	email text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE products (
	id bigint PRIMARY KEY,
	name text NOT NULL,
	price_cents integer NOT NULL
);
CREATE TABLE orders (
	id bigint PRIMARY KEY,
	customer_id bigint NOT NULL REFERENCES customers (id),
	placed_at timestamptz NOT NULL,
	status text NOT NULL
);
CREATE INDEX orders_customer_id ON orders (customer_id, placed_at DESC);
CREATE TABLE line_items (
	id bigint PRIMARY KEY,
	order_id bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
	product_id bigint NOT NULL REFERENCES products (id),
	quantity integer NOT NULL,
	price_cents integer NOT NULL
);
CREATE INDEX line_items_order_id ON line_items (order_id, id);
CREATE INDEX line_items_product_id ON line_items (product_id);
