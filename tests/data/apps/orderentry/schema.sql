-- orderentry: the TPC-C schema (warehouse, district, customer, history, orders,
-- new_order, item, stock, order_line), after BenchBase's tpcc/ddl-postgres.sql.
-- Keys and indexes are the ones the five transactions look rows up by; the
-- foreign keys are BenchBase's. Order ids come from district.d_next_o_id (read
-- FOR UPDATE and incremented in the NewOrder transaction), history rows get a
-- bigserial id.

CREATE SCHEMA orderentry;

CREATE TABLE orderentry.warehouse (
    w_id       int            NOT NULL,
    w_ytd      numeric(12, 2) NOT NULL,
    w_tax      numeric(4, 4)  NOT NULL,
    w_name     varchar(10)    NOT NULL,
    w_street_1 varchar(20)    NOT NULL,
    w_street_2 varchar(20)    NOT NULL,
    w_city     varchar(20)    NOT NULL,
    w_state    char(2)        NOT NULL,
    w_zip      char(9)        NOT NULL,
    PRIMARY KEY (w_id)
);

CREATE TABLE orderentry.district (
    d_w_id      int            NOT NULL REFERENCES orderentry.warehouse (w_id),
    d_id        int            NOT NULL,
    d_ytd       numeric(12, 2) NOT NULL,
    d_tax       numeric(4, 4)  NOT NULL,
    d_next_o_id int            NOT NULL,   -- the order-id "sequence" of the district
    d_name      varchar(10)    NOT NULL,
    d_street_1  varchar(20)    NOT NULL,
    d_street_2  varchar(20)    NOT NULL,
    d_city      varchar(20)    NOT NULL,
    d_state     char(2)        NOT NULL,
    d_zip       char(9)        NOT NULL,
    PRIMARY KEY (d_w_id, d_id)
);

CREATE TABLE orderentry.customer (
    c_w_id         int            NOT NULL,
    c_d_id         int            NOT NULL,
    c_id           int            NOT NULL,
    c_discount     numeric(4, 4)  NOT NULL,
    c_credit       char(2)        NOT NULL,
    c_last         varchar(16)    NOT NULL,
    c_first        varchar(16)    NOT NULL,
    c_credit_lim   numeric(12, 2) NOT NULL,
    c_balance      numeric(12, 2) NOT NULL,
    c_ytd_payment  float          NOT NULL,
    c_payment_cnt  int            NOT NULL,
    c_delivery_cnt int            NOT NULL,
    c_street_1     varchar(20)    NOT NULL,
    c_street_2     varchar(20)    NOT NULL,
    c_city         varchar(20)    NOT NULL,
    c_state        char(2)        NOT NULL,
    c_zip          char(9)        NOT NULL,
    c_phone        char(16)       NOT NULL,
    c_since        timestamp      NOT NULL DEFAULT now(),
    c_middle       char(2)        NOT NULL,
    c_data         varchar(500)   NOT NULL,
    PRIMARY KEY (c_w_id, c_d_id, c_id),
    FOREIGN KEY (c_w_id, c_d_id) REFERENCES orderentry.district (d_w_id, d_id)
);
-- Payment and OrderStatus look 60% of their customers up by last name.
CREATE INDEX customer_name_idx ON orderentry.customer (c_w_id, c_d_id, c_last, c_first);

CREATE TABLE orderentry.history (
    h_id     bigserial     PRIMARY KEY,
    h_c_id   int           NOT NULL,
    h_c_d_id int           NOT NULL,
    h_c_w_id int           NOT NULL,
    h_d_id   int           NOT NULL,
    h_w_id   int           NOT NULL,
    h_date   timestamp     NOT NULL DEFAULT now(),
    h_amount numeric(6, 2) NOT NULL,
    h_data   varchar(24)   NOT NULL,
    FOREIGN KEY (h_c_w_id, h_c_d_id, h_c_id) REFERENCES orderentry.customer (c_w_id, c_d_id, c_id),
    FOREIGN KEY (h_w_id, h_d_id) REFERENCES orderentry.district (d_w_id, d_id)
);

CREATE TABLE orderentry.orders (
    o_w_id       int       NOT NULL,
    o_d_id       int       NOT NULL,
    o_id         int       NOT NULL,   -- taken from district.d_next_o_id
    o_c_id       int       NOT NULL,
    o_carrier_id int       DEFAULT NULL,
    o_ol_cnt     int       NOT NULL,
    o_all_local  int       NOT NULL,
    o_entry_d    timestamp NOT NULL DEFAULT now(),
    PRIMARY KEY (o_w_id, o_d_id, o_id),
    FOREIGN KEY (o_w_id, o_d_id, o_c_id) REFERENCES orderentry.customer (c_w_id, c_d_id, c_id)
);
-- OrderStatus: a customer's newest order.
CREATE UNIQUE INDEX orders_customer_idx ON orderentry.orders (o_w_id, o_d_id, o_c_id, o_id);

CREATE TABLE orderentry.new_order (
    no_w_id int NOT NULL,
    no_d_id int NOT NULL,
    no_o_id int NOT NULL,
    PRIMARY KEY (no_w_id, no_d_id, no_o_id),   -- Delivery: oldest undelivered order of a district
    FOREIGN KEY (no_w_id, no_d_id, no_o_id) REFERENCES orderentry.orders (o_w_id, o_d_id, o_id)
);

CREATE TABLE orderentry.item (
    i_id    int           NOT NULL,
    i_im_id int           NOT NULL,
    i_name  varchar(24)   NOT NULL,
    i_price numeric(5, 2) NOT NULL,
    i_data  varchar(50)   NOT NULL,
    PRIMARY KEY (i_id)
);

CREATE TABLE orderentry.stock (
    s_w_id       int           NOT NULL REFERENCES orderentry.warehouse (w_id),
    s_i_id       int           NOT NULL REFERENCES orderentry.item (i_id),
    s_quantity   int           NOT NULL,
    s_ytd        numeric(8, 2) NOT NULL,
    s_order_cnt  int           NOT NULL,
    s_remote_cnt int           NOT NULL,
    s_data       varchar(50)   NOT NULL,
    s_dist_01    char(24)      NOT NULL,
    s_dist_02    char(24)      NOT NULL,
    s_dist_03    char(24)      NOT NULL,
    s_dist_04    char(24)      NOT NULL,
    s_dist_05    char(24)      NOT NULL,
    s_dist_06    char(24)      NOT NULL,
    s_dist_07    char(24)      NOT NULL,
    s_dist_08    char(24)      NOT NULL,
    s_dist_09    char(24)      NOT NULL,
    s_dist_10    char(24)      NOT NULL,
    PRIMARY KEY (s_w_id, s_i_id)
);

CREATE TABLE orderentry.order_line (
    ol_w_id        int           NOT NULL,
    ol_d_id        int           NOT NULL,
    ol_o_id        int           NOT NULL,
    ol_number      int           NOT NULL,
    ol_i_id        int           NOT NULL,
    ol_supply_w_id int           NOT NULL,
    ol_delivery_d  timestamp     DEFAULT NULL,
    ol_quantity    numeric(6, 2) NOT NULL,
    ol_amount      numeric(6, 2) NOT NULL,
    ol_dist_info   char(24)      NOT NULL,
    -- the primary key also serves StockLevel's range ol_o_id >= x - 20 AND ol_o_id < x
    PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number),
    -- load.sql drops and re-adds these two around its bulk insert: keep them in step
    CONSTRAINT order_line_order_fk FOREIGN KEY (ol_w_id, ol_d_id, ol_o_id) REFERENCES orderentry.orders (o_w_id, o_d_id, o_id),
    CONSTRAINT order_line_stock_fk FOREIGN KEY (ol_supply_w_id, ol_i_id) REFERENCES orderentry.stock (s_w_id, s_i_id)
);

-- TPC-C's customer last name (clause 4.3.2.3): three syllables picked by the digits of
-- a number 0..999. The loader names customers with it, and Payment/OrderStatus pass the
-- number of the name they look up (the application would build the string itself;
-- pgbench variables cannot hold a string it computes).
CREATE FUNCTION orderentry.c_last_name(n int) RETURNS varchar
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ((ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n / 100 + 1]
         || (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[(n / 10) % 10 + 1]
         || (ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])[n % 10 + 1])::varchar
$$;
