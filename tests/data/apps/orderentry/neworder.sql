-- NewOrder (TPC-C clause 2.4), the statements of BenchBase's
-- tpcc/procedures/NewOrder.java: customer, warehouse tax, district FOR UPDATE and
-- d_next_o_id + 1 (the new order's id), INSERT orders and new_order, then per order
-- line: item, stock FOR UPDATE, UPDATE stock, INSERT order_line.
--
-- Inputs as in TPC-C: the terminal's home warehouse (client_id bound, as BenchBase
-- binds a terminal to a warehouse), a random district, customer NURand(1023, 1, 3000),
-- 5..15 order lines, quantity 1..10, 1% of the lines supplied by the other warehouse,
-- and 1% of the orders end with an unused item id and are rolled back.
--
-- pgbench has no loops: the order-line loop is unrolled into 15 copies, lines 6..15
-- each under \if :ol_cnt >= n. The item ids are drawn in ascending order (line n
-- picks from the n-th of ol_cnt equal slices of the 10,000 items, skewed inside the
-- slice like NURand), so that concurrent NewOrders lock stock rows in the same order
-- and cannot deadlock; TPC-C draws them unordered.
\set nwarehouses 2
\set nitems 10000
\set w_id (:client_id % :nwarehouses) + 1
\set d_id random(1, 10)
\set c_id ((random(0, 1023) | random(1, 3000)) + 259) % 3000 + 1
\set ol_cnt random(5, 15)
\set slice :nitems / :ol_cnt
\set remote_ol random(1, 100)
\set o_all_local case when :remote_ol <= :ol_cnt and :nwarehouses > 1 then 0 else 1 end
\set rollback random(1, 100)
BEGIN;
SELECT c_discount, c_last, c_credit
  FROM orderentry.customer
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \gset
SELECT w_tax FROM orderentry.warehouse WHERE w_id = :w_id \gset
SELECT d_next_o_id, d_tax
  FROM orderentry.district
 WHERE d_w_id = :w_id AND d_id = :d_id FOR UPDATE \gset
UPDATE orderentry.district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :w_id AND d_id = :d_id;
INSERT INTO orderentry.orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
VALUES (:d_next_o_id, :d_id, :w_id, :c_id, now(), :ol_cnt, :o_all_local);
INSERT INTO orderentry.new_order (no_o_id, no_d_id, no_w_id) VALUES (:d_next_o_id, :d_id, :w_id);
-- order line 1 (unrolled)
\set ol_number 1
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
-- order line 2 (unrolled)
\set ol_number 2
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
-- order line 3 (unrolled)
\set ol_number 3
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
-- order line 4 (unrolled)
\set ol_number 4
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
-- order line 5 (unrolled)
\set ol_number 5
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\if :ol_cnt >= 6
-- order line 6 (unrolled)
\set ol_number 6
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 7
-- order line 7 (unrolled)
\set ol_number 7
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 8
-- order line 8 (unrolled)
\set ol_number 8
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 9
-- order line 9 (unrolled)
\set ol_number 9
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 10
-- order line 10 (unrolled)
\set ol_number 10
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 11
-- order line 11 (unrolled)
\set ol_number 11
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 12
-- order line 12 (unrolled)
\set ol_number 12
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 13
-- order line 13 (unrolled)
\set ol_number 13
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 14
-- order line 14 (unrolled)
\set ol_number 14
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :ol_cnt >= 15
-- order line 15 (unrolled)
\set ol_number 15
\set ol_i_id (:ol_number - 1) * :slice + ((random(0, 255) | random(1, :slice)) + 7) % :slice + 1
\set ol_quantity random(1, 10)
\set ol_supply_w_id case when :remote_ol = :ol_number then (:w_id % :nwarehouses) + 1 else :w_id end
\set s_remote_cnt_increment case when :ol_supply_w_id = :w_id then 0 else 1 end
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id \gset
SELECT s_quantity, s_data,
       CASE CAST(:d_id AS int) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                  WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                  WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS ol_dist_info
  FROM orderentry.stock
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id FOR UPDATE \gset
\set s_quantity case when :s_quantity - :ol_quantity >= 10 then :s_quantity - :ol_quantity else :s_quantity - :ol_quantity + 91 end
\set ol_amount :ol_quantity * :i_price
UPDATE orderentry.stock
   SET s_quantity = :s_quantity, s_ytd = s_ytd + :ol_quantity, s_order_cnt = s_order_cnt + 1,
       s_remote_cnt = s_remote_cnt + :s_remote_cnt_increment
 WHERE s_i_id = :ol_i_id AND s_w_id = :ol_supply_w_id;
INSERT INTO orderentry.order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info)
VALUES (:d_next_o_id, :d_id, :w_id, :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_dist_info);
\endif
\if :rollback = 1
-- TPC-C 2.4.2.3: an unused item number; the lookup finds nothing and the order is rolled back.
\set ol_i_id :nitems + 1
SELECT i_price, i_name, i_data FROM orderentry.item WHERE i_id = :ol_i_id;
ROLLBACK;
\else
COMMIT;
\endif
