-- tests/data/old-nb201-keys.sql: a version-2 database written by nas 99f4266 (arch_key =
-- NAS-Bench-201's string): 'nas run' of the config in tests/e2e/test_key_migration.sh
-- (evolution, seed 3, 60 trials on the 12-epoch table), cut to its first 40 trials and
-- marked interrupted (sqlite3 .dump). @TABLE@ stands for the table's path.
-- .dump leaves out the two pragmas; they are set by hand (application_id "nas1").
PRAGMA application_id = 1851880241;
PRAGMA user_version = 2;
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE experiment(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  conf_canonical TEXT NOT NULL UNIQUE,
  conf_text TEXT NOT NULL,
  conf_path TEXT NOT NULL,
  seed INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  trials_budget INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('running','done','interrupted','failed','exhausted'))
);
INSERT INTO experiment VALUES(1,'keys-v2',replace('experiment = "keys-v2";\nseed = 3;\ndata.dataset = "fashion-mnist";\ndata.dir = "/usr/share/datasets/fashion-mnist";\ndata.train_subset = 0;\ndata.valid = 5000;\nspace.type = "cell";\nspace.nodes = 4;\nspace.ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"];\nspace.channels = 16;\nspace.stages = 3;\nspace.cells_per_stage = 1;\nproxy.epochs = 1;\nproxy.batch_size = 128;\nproxy.lr = 0.05;\nproxy.momentum = 0.9;\nproxy.nesterov = true;\nproxy.weight_decay = 0.0005;\nproxy.schedule = "cosine";\nproxy.threads = 2;\nproxy.backend = "cpu";\nproxy.precision = "fp32";\nproxy.keep_weights = false;\nsearch.strategy = "evolution";\nsearch.trials = 60;\nsearch.population = 10;\nsearch.sample_size = 3;\nsearch.nao.seed_archs = 20;\nsearch.nao.top_k = 5;\nsearch.nao.embed_size = 16;\nsearch.nao.hidden_size = 32;\nsearch.nao.epochs = 30;\nsearch.nao.lr = 0.005;\nsearch.nao.tradeoff = 0.8;\nsearch.nao.step = 0.1;\nsearch.nao.step_growth = 1.5;\nsearch.nao.max_steps = 8;\nsearch.nao.batch_per_round = 2;\nsearch.nao.beam_width = 16;\nsearch.nao.max_edit = 1;\nsearch.nao.rank_weight = 0.0;\nsearch.nao.fill_neighbours = true;\nevaluator.kind = "table";\nevaluator.table = "@TABLE@";\nevaluator.column = "cifar10-val";\nevaluator.test_column = "cifar10-test";\nevaluator.table_scale = 0.01;\nevaluator.latency_runs = 20;\nevaluator.latency_warmup = 3;\nobjectives = ( { metric = "val_accuracy"; goal = "max"; } );\nconstraints.latency_ms = 0.0;\nconstraints.mmacs = 0.0;\nconstraints.params = 0.0;\nworkers.count = 0;\nworkers.device = "cpu";\nworkers.trial_timeout_s = 0;\nworkers.heartbeat_s = 5;\nworkers.max_retries = 1;\nworkers.gpus = "all";\nworkers.trials_per_gpu = 1;\nworkers.ordered = true;\n','\n',char(10)),replace('experiment = "keys-v2";\nseed = 3;\nsearch: { strategy = "evolution"; trials = 60; population = 10; sample_size = 3; };\nevaluator: { kind = "table"; table = "@TABLE@"; column = "cifar10-val"; test_column = "cifar10-test"; table_scale = 0.01; };\nworkers: { count = 0; };\n','\n',char(10)),'c3.conf',3,'evolution',60,'2026-11-23T20:38:14.090Z','2026-11-23T20:38:14.162Z','interrupted');
CREATE TABLE trial(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiment(id),
  genotype TEXT NOT NULL,
  arch_key TEXT NOT NULL,
  proposed_by TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('pending','running','done','failed','interrupted')),
  worker INTEGER,
  device TEXT,
  attempt INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  error TEXT, device_name TEXT, device_cc TEXT,
  UNIQUE(experiment_id, arch_key)
);
INSERT INTO trial VALUES(1,1,'|nor_conv_1x1~0|+|avg_pool_3x3~0|skip_connect~1|+|none~0|nor_conv_1x1~1|avg_pool_3x3~2|','#+((0)@avg_pool_3x3+(0)@nor_conv_1x1)@avg_pool_3x3+((0)@nor_conv_1x1)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:38:14.140Z','2026-11-23T20:38:14.140Z','2026-11-23T20:38:14.140Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(2,1,'|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|nor_conv_1x1~0|none~1|none~2|','#+#+(0)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:38:14.140Z','2026-11-23T20:38:14.140Z','2026-11-23T20:38:14.140Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(3,1,'|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+((0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.140Z','2026-11-23T20:38:14.140Z','2026-11-23T20:38:14.140Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(4,1,'|avg_pool_3x3~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(((0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(5,1,'|skip_connect~0|+|avg_pool_3x3~0|skip_connect~1|+|nor_conv_3x3~0|none~1|avg_pool_3x3~2|','#+((0)@avg_pool_3x3+0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(6,1,'|skip_connect~0|+|none~0|skip_connect~1|+|none~0|nor_conv_1x1~1|skip_connect~2|','#+#+0+(0)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(7,1,'|nor_conv_1x1~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|none~0|avg_pool_3x3~1|nor_conv_3x3~2|','#+(((0)@nor_conv_1x1)@nor_conv_1x1+(0)@avg_pool_3x3)@nor_conv_3x3+((0)@nor_conv_1x1)@avg_pool_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(8,1,'|nor_conv_1x1~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|nor_conv_1x1~0|skip_connect~1|avg_pool_3x3~2|','(((0)@nor_conv_1x1)@avg_pool_3x3+(0)@nor_conv_1x1)@avg_pool_3x3+(0)@nor_conv_1x1+(0)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(9,1,'|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|none~0|avg_pool_3x3~1|none~2|','#+#+((0)@nor_conv_3x3)@avg_pool_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z','2026-11-23T20:38:14.141Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(10,1,'|skip_connect~0|+|avg_pool_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|avg_pool_3x3~1|nor_conv_3x3~2|','((0)@avg_pool_3x3+(0)@nor_conv_3x3)@nor_conv_3x3+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(11,1,'|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|nor_conv_1x1~1|skip_connect~2|','#+((0)@nor_conv_1x1)@nor_conv_1x1+((0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(12,1,'|skip_connect~0|+|nor_conv_1x1~0|skip_connect~1|+|none~0|nor_conv_1x1~1|skip_connect~2|','#+(0)@nor_conv_1x1+(0)@nor_conv_1x1+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(13,1,'|none~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+#+#+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(14,1,'|avg_pool_3x3~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|skip_connect~0|skip_connect~1|nor_conv_1x1~2|','(((0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(15,1,'|skip_connect~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|none~0|nor_conv_1x1~1|skip_connect~2|','#+(0)@nor_conv_1x1+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.142Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(16,1,'|nor_conv_3x3~0|+|none~0|skip_connect~1|+|none~0|nor_conv_1x1~1|skip_connect~2|','#+#+(0)@nor_conv_3x3+((0)@nor_conv_3x3)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:38:14.142Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(17,1,'|skip_connect~0|+|avg_pool_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|avg_pool_3x3~1|none~2|','#+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(18,1,'|nor_conv_3x3~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+((0)@nor_conv_3x3)@nor_conv_1x1+(0)@nor_conv_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(19,1,'|skip_connect~0|+|nor_conv_1x1~0|skip_connect~1|+|none~0|nor_conv_3x3~1|skip_connect~2|','#+(0)@nor_conv_1x1+0+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(20,1,'|skip_connect~0|+|nor_conv_1x1~0|skip_connect~1|+|none~0|skip_connect~1|skip_connect~2|','#+(0)@nor_conv_1x1+0+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(21,1,'|none~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_3x3~2|','#+(#+#)@nor_conv_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(22,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+(0)@nor_conv_1x1+(0)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.143Z','2026-11-23T20:38:14.144Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(23,1,'|skip_connect~0|+|avg_pool_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|avg_pool_3x3~1|nor_conv_1x1~2|','((0)@avg_pool_3x3+(0)@nor_conv_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(24,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|none~2|','#+(0)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(25,1,'|skip_connect~0|+|none~0|none~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+#+(0)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(26,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|avg_pool_3x3~0|skip_connect~1|none~2|','#+(0)@avg_pool_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(27,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|nor_conv_1x1~1|none~2|','#+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.144Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(28,1,'|none~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','#+(#+#)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.144Z','2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(29,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_3x3~2|','(#+(0)@nor_conv_1x1)@nor_conv_3x3+(0)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(30,1,'|skip_connect~0|+|none~0|none~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|','#+#+(0)@nor_conv_1x1+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(31,1,'|skip_connect~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_3x3~2|','((0)@nor_conv_1x1+(0)@nor_conv_3x3)@nor_conv_3x3+(0)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(32,1,'|none~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|none~2|','#+#+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z','2026-11-23T20:38:14.153Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(33,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|none~0|skip_connect~1|nor_conv_3x3~2|','#+(#+(0)@nor_conv_1x1)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(34,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|nor_conv_1x1~1|nor_conv_1x1~2|','(#+(0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(35,1,'|skip_connect~0|+|none~0|none~1|+|skip_connect~0|skip_connect~1|skip_connect~2|','#+#+0+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(36,1,'|nor_conv_3x3~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|nor_conv_1x1~1|none~2|','#+((0)@nor_conv_3x3)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(37,1,'|skip_connect~0|+|none~0|skip_connect~1|+|nor_conv_3x3~0|nor_conv_1x1~1|nor_conv_1x1~2|','(#+0)@nor_conv_1x1+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(38,1,'|skip_connect~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|avg_pool_3x3~2|','((0)@nor_conv_1x1+(0)@nor_conv_3x3)@avg_pool_3x3+(0)@nor_conv_3x3+0','evolution','done',0,'table',1,'2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z','2026-11-23T20:38:14.154Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(39,1,'|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|','(#+(0)@nor_conv_1x1)@nor_conv_3x3+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.155Z','2026-11-23T20:38:14.155Z','2026-11-23T20:38:14.155Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(40,1,'|nor_conv_1x1~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_3x3~2|','(((0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_3x3)@nor_conv_3x3+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:38:14.155Z','2026-11-23T20:38:14.155Z','2026-11-23T20:38:14.155Z',NULL,NULL,NULL);
CREATE TABLE result(
  trial_id INTEGER PRIMARY KEY REFERENCES trial(id),
  val_accuracy REAL,
  test_accuracy REAL,
  train_loss REAL,
  macs INTEGER,
  params INTEGER,
  latency_ms REAL,
  train_seconds REAL,
  epochs INTEGER,
  score REAL
);
INSERT INTO result VALUES(1,0.70126000017089840099,0.76549999999999995825,0.0,6937472,84218,0.0,0.0,NULL,0.70126000017089840099);
INSERT INTO result VALUES(2,0.72027999992675773022,0.79849999999999998756,0.0,17173376,175834,0.0,0.0,NULL,0.72027999992675773022);
INSERT INTO result VALUES(3,0.77521999989013667953,0.84970000000000001083,0.0,12356480,132826,0.0,0.0,NULL,0.77521999989013667953);
INSERT INTO result VALUES(4,0.72176000003662110771,0.77810000000000001385,0.0,12356480,132826,0.0,0.0,NULL,0.72176000003662110771);
INSERT INTO result VALUES(5,0.65641999982910170796,0.72010000000000007336,0.0,11152256,121626,0.0,0.0,NULL,0.65641999982910170796);
INSERT INTO result VALUES(6,0.77658000004882810074,0.82370000000000009876,0.0,6335360,78618,0.0,0.0,NULL,0.77658000004882810074);
INSERT INTO result VALUES(7,0.64279999987792968418,0.75370000000000003659,0.0,12356480,132826,0.0,0.0,NULL,0.64279999987792968418);
INSERT INTO result VALUES(8,0.67685999989624023864,0.7715000000000000746,0.0,7539584,89818,0.0,0.0,NULL,0.67685999989624023864);
INSERT INTO result VALUES(9,0.6068999998962403275,0.70230000000000003534,0.0,11754368,127226,0.0,0.0,NULL,0.6068999998962403275);
INSERT INTO result VALUES(10,0.71953999998779294422,0.803700000000000081,0.0,21990272,218842,0.0,0.0,NULL,0.71953999998779294422);
INSERT INTO result VALUES(11,0.7575400000976562076,0.82720000000000004636,0.0,12958592,138426,0.0,0.0,NULL,0.7575400000976562076);
INSERT INTO result VALUES(12,0.77758000004882821265,0.82159999999999999698,0.0,6937472,84218,0.0,0.0,NULL,0.77758000004882821265);
INSERT INTO result VALUES(13,0.77073999984130869833,0.83489999999999997548,0.0,11754368,127226,0.0,0.0,NULL,0.77073999984130869833);
INSERT INTO result VALUES(14,0.56214000000610353513,0.64900000000000002131,0.0,6937472,84218,0.0,0.0,NULL,0.56214000000610353513);
INSERT INTO result VALUES(15,0.80151999984130872789,0.85470000000000001527,0.0,12356480,132826,0.0,0.0,NULL,0.80151999984130872789);
INSERT INTO result VALUES(16,0.70957999978027341825,0.8257999999999999785,0.0,11754368,127226,0.0,0.0,NULL,0.70957999978027341825);
INSERT INTO result VALUES(17,0.72601999997558597232,0.78639999999999998792,0.0,16571264,170234,0.0,0.0,NULL,0.72601999997558597232);
INSERT INTO result VALUES(18,0.76662000006103514504,0.84959999999999991082,0.0,17173376,175834,0.0,0.0,NULL,0.76662000006103514504);
INSERT INTO result VALUES(19,0.81407999991455082255,0.8625000000000000444,0.0,11754368,127226,0.0,0.0,NULL,0.81407999991455082255);
INSERT INTO result VALUES(20,0.63701999989624025211,0.70769999999999999573,0.0,6335360,78618,0.0,0.0,NULL,0.63701999989624025211);
INSERT INTO result VALUES(21,0.76193999996337891111,0.83650000000000002131,0.0,17173376,175834,0.0,0.0,NULL,0.76193999996337891111);
INSERT INTO result VALUES(22,0.81509999970703117533,0.86459999999999992414,0.0,11754368,127226,0.0,0.0,NULL,0.81509999970703117533);
INSERT INTO result VALUES(23,0.74124000007324208905,0.8205000000000000071,0.0,17173376,175834,0.0,0.0,NULL,0.74124000007324208905);
INSERT INTO result VALUES(24,0.81513999992675789663,0.8595999999999999197,0.0,11754368,127226,0.0,0.0,NULL,0.81513999992675789663);
INSERT INTO result VALUES(25,0.80847999978027351719,0.86319999999999996731,0.0,11152256,121626,0.0,0.0,NULL,0.80847999978027351719);
INSERT INTO result VALUES(26,0.5327799999511718676,0.61809999999999998276,0.0,6335360,78618,0.0,0.0,NULL,0.5327799999511718676);
INSERT INTO result VALUES(27,0.79749999991455067238,0.85189999999999999058,0.0,12356480,132826,0.0,0.0,NULL,0.79749999991455067238);
INSERT INTO result VALUES(28,0.76463999997558607102,0.84379999999999999449,0.0,12356480,132826,0.0,0.0,NULL,0.76463999997558607102);
INSERT INTO result VALUES(29,0.82334000004882823553,0.86819999999999997175,0.0,17173376,175834,0.0,0.0,NULL,0.82334000004882823553);
INSERT INTO result VALUES(30,0.77658000004882810074,0.82370000000000009876,0.0,6335360,78618,0.0,0.0,NULL,0.77658000004882810074);
INSERT INTO result VALUES(31,0.83193999989013667217,0.88090000000000001634,0.0,22592384,224442,0.0,0.0,NULL,0.83193999989013667217);
INSERT INTO result VALUES(32,0.77103999991455085538,0.83629999999999993232,0.0,11754368,127226,0.0,0.0,NULL,0.77103999991455085538);
INSERT INTO result VALUES(33,0.82541999992675785247,0.87109999999999998543,0.0,11754368,127226,0.0,0.0,NULL,0.82541999992675785247);
INSERT INTO result VALUES(34,0.79325999995117191243,0.8498999999999999888,0.0,12958592,138426,0.0,0.0,NULL,0.79325999995117191243);
INSERT INTO result VALUES(35,0.59449999996337898888,0.67469999999999996642,0.0,5733248,73018,0.0,0.0,NULL,0.59449999996337898888);
INSERT INTO result VALUES(36,0.74927999998779304391,0.84319999999999994955,0.0,17775488,181434,0.0,0.0,NULL,0.74927999998779304391);
INSERT INTO result VALUES(37,0.79250000006103515914,0.85150000000000003463,0.0,12356480,132826,0.0,0.0,NULL,0.79250000006103515914);
INSERT INTO result VALUES(38,0.80443999974365232308,0.8581000000000000849,0.0,17173376,175834,0.0,0.0,NULL,0.80443999974365232308);
INSERT INTO result VALUES(39,0.79463999986572275702,0.84799999999999997601,0.0,17775488,181434,0.0,0.0,NULL,0.79463999986572275702);
INSERT INTO result VALUES(40,0.78444000001220703932,0.85609999999999997211,0.0,23194496,230042,0.0,0.0,NULL,0.78444000001220703932);
CREATE TABLE strategy_state(
  experiment_id INTEGER NOT NULL REFERENCES experiment(id),
  name TEXT NOT NULL,
  blob BLOB,
  updated_at TEXT NOT NULL,
  PRIMARY KEY(experiment_id, name)
);
INSERT INTO strategy_state VALUES(1,'controller.workers',X'31','2026-11-23T20:38:14.102Z');
CREATE INDEX trial_by_status ON trial(experiment_id, status);
COMMIT;
