-- docs/sql/fold-affected-trials.sql - trials whose recorded accuracy came
-- from the eval forward pass that skipped a batch norm (issue 19; fixed in
-- the commit "net: fold a batch norm only into the conv that writes its
-- input"). Run it on a database written before that fix:
--
--   sqlite3 -header -column nas.db < docs/sql/fold-affected-trials.sql
--
-- nas before the fix folded the final BN (`lastact`) into the same conv as
-- an edge's BN when the cell's output node was that edge's BN output, and
-- skipped the edge's BN in every eval-mode forward pass (validation
-- accuracy, `nas train` test accuracy, `nas export --logits`). Only the
-- cpu backend in fp32 and the ref backend fold; table look-ups, cuda and
-- cpu in bf16 were right. The class (784 of the 15,625 cells; 799 when
-- space.stages = 1) is decided by the genotype string, node by node
-- (node 1 | node 2 | node 3, split at '+'):
--   - node 3 has one input and it is a conv edge (750 cells);
--   - node 3 is only a skip from node 1, node 1 only a conv edge, and
--     node 2 does not read node 1 except as its only (skip) input (12);
--   - node 3 is only a skip from node 2, and node 2 is only a conv edge,
--     or only a skip from such a node 1 (22);
--   - with space.stages = 1 only: the cell passes its input to the output
--     through skips alone and nothing else reads it (15; the stem's BN
--     was skipped).
-- In 70 of the 784 the skipped BN read an all-zero node (its conv's input
-- has no path from the cell input), which it maps to zero: those results
-- were right; re-running them is harmless.
-- To re-measure, rerun the trials with a fixed nas (`nas export --db DB
-- --trial ID --format json -o t.json && nas train t.json --proxy`).
WITH split1 AS (
  SELECT t.id, t.experiment_id, t.genotype, t.status, t.device, e.conf_canonical AS conf,
         substr(t.genotype, 1, instr(t.genotype, '+') - 1) AS n1,
         substr(t.genotype, instr(t.genotype, '+') + 1) AS rest
  FROM trial t JOIN experiment e ON e.id = t.experiment_id
  WHERE t.device IN ('cpu', 'ref')
    AND e.conf_canonical NOT LIKE '%proxy.precision = "bf16";%'
), nodes AS (
  SELECT id, experiment_id, genotype, status, device, conf, n1,
         substr(rest, 1, instr(rest, '+') - 1) AS n2,
         substr(rest, instr(rest, '+') + 1) AS n3
  FROM split1
)
SELECT id, experiment_id, status, device, genotype
FROM nodes
WHERE n3 IN ('|nor_conv_1x1~0|none~1|none~2|', '|nor_conv_3x3~0|none~1|none~2|',
             '|none~0|nor_conv_1x1~1|none~2|', '|none~0|nor_conv_3x3~1|none~2|',
             '|none~0|none~1|nor_conv_1x1~2|', '|none~0|none~1|nor_conv_3x3~2|')
   OR (n3 = '|none~0|skip_connect~1|none~2|' AND n1 GLOB '|nor_conv_*'
       AND (n2 GLOB '*|none~1|' OR n2 = '|none~0|skip_connect~1|'))
   OR (n3 = '|none~0|none~1|skip_connect~2|'
       AND (n2 IN ('|nor_conv_1x1~0|none~1|', '|nor_conv_3x3~0|none~1|',
                   '|none~0|nor_conv_1x1~1|', '|none~0|nor_conv_3x3~1|')
            OR (n2 = '|none~0|skip_connect~1|' AND n1 GLOB '|nor_conv_*')))
   OR (conf LIKE '%space.stages = 1;%' AND genotype IN (
       '|none~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|none~2|',
       '|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|',
       '|none~0|+|none~0|nor_conv_1x1~1|+|skip_connect~0|none~1|none~2|',
       '|none~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|none~2|',
       '|none~0|+|none~0|skip_connect~1|+|skip_connect~0|none~1|none~2|',
       '|none~0|+|skip_connect~0|none~1|+|none~0|none~1|skip_connect~2|',
       '|none~0|+|skip_connect~0|none~1|+|skip_connect~0|none~1|none~2|',
       '|skip_connect~0|+|none~0|none~1|+|none~0|skip_connect~1|none~2|',
       '|skip_connect~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|',
       '|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|',
       '|skip_connect~0|+|none~0|skip_connect~1|+|none~0|skip_connect~1|none~2|',
       '|skip_connect~0|+|none~0|skip_connect~1|+|skip_connect~0|none~1|none~2|',
       '|skip_connect~0|+|skip_connect~0|none~1|+|none~0|none~1|skip_connect~2|',
       '|skip_connect~0|+|skip_connect~0|none~1|+|none~0|skip_connect~1|none~2|',
       '|skip_connect~0|+|skip_connect~0|none~1|+|skip_connect~0|none~1|none~2|'))
ORDER BY experiment_id, id;
