-- StockLevel (TPC-C clause 2.8), the statements of BenchBase's
-- tpcc/procedures/StockLevel.java: the district's next order id, then the number of
-- distinct items of its last 20 orders (ol_o_id < next AND ol_o_id >= next - 20)
-- whose stock in the warehouse is below a threshold of 10..20. Read-only.
\set nwarehouses 2
\set w_id (:client_id % :nwarehouses) + 1
\set d_id random(1, 10)
\set threshold random(10, 20)
BEGIN;
SELECT d_next_o_id FROM orderentry.district WHERE d_w_id = :w_id AND d_id = :d_id \gset
\set o_id_low :d_next_o_id - 20
SELECT COUNT(DISTINCT (s_i_id)) AS stock_count
  FROM orderentry.order_line, orderentry.stock
 WHERE ol_w_id = :w_id
   AND ol_d_id = :d_id
   AND ol_o_id < :d_next_o_id
   AND ol_o_id >= :o_id_low
   AND s_w_id = :w_id
   AND s_i_id = ol_i_id
   AND s_quantity < :threshold;
COMMIT;
