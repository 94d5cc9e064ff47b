-- orderentry initial population, after TPC-C clause 4.3.3.1, at 2 warehouses with
-- 10,000 items (not 100,000). Deterministic: every "random" column is a hash-like
-- expression of the row's keys. Run after schema.sql.
--   warehouse 2, district 20, customer 60,000 (3,000 a district), history 60,000,
--   item 10,000, stock 20,000, orders 60,000 (3,000 a district), new_order 18,000
--   (orders 2,101..3,000 of each district), order_line about 600,000 (5..15 an order).
-- Every referenced table is analyzed as soon as it is filled: the foreign-key checks of
-- the next inserts are planned once, and without statistics the planner may probe
-- customer through customer_name_idx (3,000 rows a probe) instead of its primary key.

SET jit = off;

INSERT INTO orderentry.warehouse
SELECT w,
       300000.00,
       ((w * 7919) % 2001) / 10000.0,                       -- w_tax 0.0000..0.2000
       'WH-' || w,
       'street ' || w, 'suite ' || w, 'city ' || w, 'NY', lpad(w::text, 4, '0') || '11111'
FROM generate_series(1, 2) AS w;
ANALYZE orderentry.warehouse;

INSERT INTO orderentry.district
SELECT w, d,
       30000.00,
       ((w * 7919 + d * 104729) % 2001) / 10000.0,          -- d_tax
       3001,                                                 -- d_next_o_id: 3,000 orders loaded
       'D-' || w || '-' || d,
       'street ' || d, 'suite ' || d, 'city ' || d, 'NY', lpad(d::text, 4, '0') || '11111'
FROM generate_series(1, 2) AS w, generate_series(1, 10) AS d;
ANALYZE orderentry.district;

-- Customers 1..1000 of a district carry the last names 0..999 in order, the others
-- NURand(255, 0, 999) with hashint4() of the keys standing in for the two random draws,
-- so every name exists in every district and the by-name lookups of Payment and
-- OrderStatus always find someone (3 namesakes on average, up to ~70 as NURand skews).
INSERT INTO orderentry.customer
SELECT w, d, c,
       ((c * 7919 + d * 31 + w) % 5001) / 10000.0,          -- c_discount 0..0.5
       CASE WHEN (c * 7 + d * 3 + w) % 10 = 0 THEN 'BC' ELSE 'GC' END,  -- 10% bad credit
       orderentry.c_last_name(CASE WHEN c <= 1000 THEN c - 1
                                   ELSE (((hashint4(c * 100 + d * 3 + w) & 255)
                                           | ((hashint4(c * 100 + d * 3 + w + 7) & 1073741823) % 1000)) + 157) % 1000 END),
       'F' || substr(md5(w || '-' || d || '-' || c), 1, 12),
       50000.00,
       -10.00,
       10.0,
       1,
       0,
       'street ' || c, 'suite ' || d, 'city ' || w, 'NY', lpad(c::text, 4, '0') || '11111',
       lpad(((c::bigint * 104729 + d * 7919 + w) % 10000000000000000)::text, 16, '0'),
       now(),
       'OE',
       rpad('', 300 + (c * 7) % 201, md5(c || '/' || d || '/' || w))   -- c_data 300..500 chars
FROM generate_series(1, 2) AS w, generate_series(1, 10) AS d, generate_series(1, 3000) AS c;
ANALYZE orderentry.customer;

INSERT INTO orderentry.history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
SELECT c, d, w, d, w, now(), 10.00, 'initial payment ' || w || '-' || d
FROM generate_series(1, 2) AS w, generate_series(1, 10) AS d, generate_series(1, 3000) AS c;

-- 10% of the items and stock rows carry 'ORIGINAL' in their data (clause 4.3.3.1).
INSERT INTO orderentry.item
SELECT i,
       (i * 7919) % 10000 + 1,
       'item-' || substr(md5(i::text), 1, 14),
       (100 + (i * 7919) % 9901) / 100.0,                   -- i_price 1.00..100.00
       CASE WHEN (i * 13) % 10 = 0
            THEN rpad('ORIGINAL-' || md5(i::text), 26 + (i % 25), 'x')
            ELSE rpad(md5(i::text), 26 + (i % 25), 'y') END
FROM generate_series(1, 10000) AS i;
ANALYZE orderentry.item;

INSERT INTO orderentry.stock
SELECT w, i,
       10 + (i * 7919 + w * 104729) % 91,                   -- s_quantity 10..100
       0, 0, 0,
       CASE WHEN (i * 17 + w) % 10 = 0
            THEN rpad('ORIGINAL-' || md5(w || '/' || i), 26 + ((i + w) % 25), 'x')
            ELSE rpad(md5(w || '/' || i), 26 + ((i + w) % 25), 'y') END,
       rpad('d01-' || w || '-' || i, 24, 'x'), rpad('d02-' || w || '-' || i, 24, 'x'),
       rpad('d03-' || w || '-' || i, 24, 'x'), rpad('d04-' || w || '-' || i, 24, 'x'),
       rpad('d05-' || w || '-' || i, 24, 'x'), rpad('d06-' || w || '-' || i, 24, 'x'),
       rpad('d07-' || w || '-' || i, 24, 'x'), rpad('d08-' || w || '-' || i, 24, 'x'),
       rpad('d09-' || w || '-' || i, 24, 'x'), rpad('d10-' || w || '-' || i, 24, 'x')
FROM generate_series(1, 2) AS w, generate_series(1, 10000) AS i;
ANALYZE orderentry.stock;

-- Orders 1..3000 of a district; o_c_id is a permutation of the 3,000 customers
-- (1237 is prime to 3000), so every customer has exactly one order to show in
-- OrderStatus. Orders below 2101 are delivered (carrier set), the rest are new orders.
INSERT INTO orderentry.orders
SELECT w, d, o,
       (o * 1237 + d * 7) % 3000 + 1,
       CASE WHEN o < 2101 THEN (o * 7) % 10 + 1 END,
       5 + (o * 7919 + d * 13 + w * 7) % 11,                -- o_ol_cnt 5..15
       1,
       now()
FROM generate_series(1, 2) AS w, generate_series(1, 10) AS d, generate_series(1, 3000) AS o;
ANALYZE orderentry.orders;

INSERT INTO orderentry.new_order
SELECT w, d, o
FROM generate_series(1, 2) AS w, generate_series(1, 10) AS d, generate_series(2101, 3000) AS o;

-- order_line's ~600,000 rows are loaded without their two foreign keys, which are then
-- added back and validated in one pass each (row-by-row checks took ~13 s of 17 s).
ALTER TABLE orderentry.order_line DROP CONSTRAINT order_line_order_fk,
                                  DROP CONSTRAINT order_line_stock_fk;
INSERT INTO orderentry.order_line
SELECT o.o_w_id, o.o_d_id, o.o_id, n,
       (o.o_id * 7919 + n * 104729 + o.o_d_id * 31 + o.o_w_id * 17) % 10000 + 1,
       o.o_w_id,
       CASE WHEN o.o_id < 2101 THEN o.o_entry_d END,
       5,
       CASE WHEN o.o_id < 2101 THEN 0
            ELSE (1 + (o.o_id * n * 7919 + o.o_d_id) % 999999) / 100.0 END,
       rpad('dist-' || o.o_w_id || '-' || o.o_d_id || '-' || o.o_id, 24, 'x')
FROM orderentry.orders AS o, generate_series(1, o.o_ol_cnt) AS n;
ALTER TABLE orderentry.order_line
    ADD CONSTRAINT order_line_order_fk FOREIGN KEY (ol_w_id, ol_d_id, ol_o_id) REFERENCES orderentry.orders (o_w_id, o_d_id, o_id),
    ADD CONSTRAINT order_line_stock_fk FOREIGN KEY (ol_supply_w_id, ol_i_id) REFERENCES orderentry.stock (s_w_id, s_i_id);

RESET jit;

-- warehouse, district, customer, item, stock and orders were analyzed as they were
-- filled (above) and have not changed since; the last three complete the schema.
ANALYZE orderentry.history;
ANALYZE orderentry.new_order;
ANALYZE orderentry.order_line;
