-- Delivery (TPC-C clause 2.7), the statements of BenchBase's
-- tpcc/procedures/Delivery.java, for the 10 districts of the terminal's warehouse:
-- the oldest new_order, DELETE it, the order's customer, UPDATE the order's carrier,
-- UPDATE its lines' delivery date (now()), SUM the lines' amounts, UPDATE the
-- customer's balance and delivery count. A district without new orders is skipped
-- (BenchBase's `continue`).
--
-- pgbench has no loops: the district loop is unrolled into 10 copies (d_id 1..10).
-- Simplified: the oldest new_order is read FOR UPDATE, so that two Deliveries of one
-- warehouse under READ COMMITTED take consecutive orders instead of delivering the
-- same one twice (BenchBase runs it SERIALIZABLE and aborts instead). Rows are locked
-- district by district in ascending order, so Deliveries cannot deadlock each other.
\set nwarehouses 2
\set w_id (:client_id % :nwarehouses) + 1
\set o_carrier_id random(1, 10)
BEGIN;
-- district 1 (unrolled)
\set d_id 1
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 2 (unrolled)
\set d_id 2
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 3 (unrolled)
\set d_id 3
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 4 (unrolled)
\set d_id 4
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 5 (unrolled)
\set d_id 5
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 6 (unrolled)
\set d_id 6
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 7 (unrolled)
\set d_id 7
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 8 (unrolled)
\set d_id 8
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 9 (unrolled)
\set d_id 9
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
-- district 10 (unrolled)
\set d_id 10
\set no_o_id 0
SELECT no_o_id
  FROM orderentry.new_order
 WHERE no_d_id = :d_id AND no_w_id = :w_id
 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE \aset
\if :no_o_id > 0
DELETE FROM orderentry.new_order WHERE no_o_id = :no_o_id AND no_d_id = :d_id AND no_w_id = :w_id;
SELECT o_c_id FROM orderentry.orders WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id \gset
UPDATE orderentry.orders SET o_carrier_id = :o_carrier_id
 WHERE o_id = :no_o_id AND o_d_id = :d_id AND o_w_id = :w_id;
UPDATE orderentry.order_line SET ol_delivery_d = now()
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
SELECT SUM(ol_amount) AS ol_total
  FROM orderentry.order_line
 WHERE ol_o_id = :no_o_id AND ol_d_id = :d_id AND ol_w_id = :w_id \gset
UPDATE orderentry.customer
   SET c_balance = c_balance + :ol_total, c_delivery_cnt = c_delivery_cnt + 1
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :o_c_id;
\endif
COMMIT;
