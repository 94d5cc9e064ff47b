-- an agent exits: no coordinator may take it any more
UPDATE agents SET state = 'gone' WHERE name = ? AND pid = ? AND state IN ('waiting', 'taken')
