-- OrderStatus (TPC-C clause 2.6), the statements of BenchBase's
-- tpcc/procedures/OrderStatus.java: find the customer (60% by last name, 40% by id),
-- the customer's newest order (ORDER BY o_id DESC LIMIT 1), and that order's lines.
-- Read-only. As in payment.sql, the by-name lookup returns every namesake ordered by
-- c_first and pgbench's \aset keeps one of them; the name is built from its number by
-- orderentry.c_last_name().
\set nwarehouses 2
\set w_id (:client_id % :nwarehouses) + 1
\set d_id random(1, 10)
\set y random(1, 100)
\set c_id ((random(0, 1023) | random(1, 3000)) + 259) % 3000 + 1
\set c_last_number ((random(0, 255) | random(0, 999)) + 223) % 1000
BEGIN;
\if :y <= 60
SELECT c_first, c_middle, c_id, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone,
       c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_since
  FROM orderentry.customer
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_last = orderentry.c_last_name(:c_last_number)
 ORDER BY c_first \aset
\else
SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone,
       c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_since
  FROM orderentry.customer
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \gset
\endif
SELECT o_id, o_carrier_id, o_entry_d
  FROM orderentry.orders
 WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id
 ORDER BY o_id DESC LIMIT 1 \gset
SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
  FROM orderentry.order_line
 WHERE ol_o_id = :o_id AND ol_d_id = :d_id AND ol_w_id = :w_id;
COMMIT;
