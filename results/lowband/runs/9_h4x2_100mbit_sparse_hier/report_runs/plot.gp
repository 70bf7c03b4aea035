set terminal pngcairo size 1400,420 font ',10'
set output '/tmp/hb/9_h4x2_100mbit_sparse_hier/report.png'
set multiplot layout 1,2 title 'gradwire lowband: 4 hosts, mlp'
set termoption noenhanced
set key bottom right font ',8'
set grid
set ylabel 'test accuracy'
set logscale x
set format x '%.0s%cB'
set xlabel 'bytes sent per rank (gradients + parameters)'
set title '100 Mbit/s'
plot '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dense@flat.dat' using 3:2 with linespoints title 'dense@flat', '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dense@hier.dat' using 3:2 with linespoints title 'dense@hier', '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dgc@flat.dat' using 3:2 with linespoints title 'dgc@flat', '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dgc@hier.dat' using 3:2 with linespoints title 'dgc@hier', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%g'
set xlabel 'training time, evaluation excluded (s)'
set title '100 Mbit/s'
plot '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dense@flat.dat' using 1:2 with linespoints title 'dense@flat', '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dense@hier.dat' using 1:2 with linespoints title 'dense@hier', '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dgc@flat.dat' using 1:2 with linespoints title 'dgc@flat', '/tmp/hb/9_h4x2_100mbit_sparse_hier/report_runs/plotdata/100_dgc@hier.dat' using 1:2 with linespoints title 'dgc@hier', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
unset multiplot
