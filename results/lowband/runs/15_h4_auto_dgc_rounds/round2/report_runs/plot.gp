set terminal pngcairo size 1400,1260 font ',10'
set output '/tmp/lb15/round2/report.png'
set multiplot layout 3,2 title 'gradwire lowband: 4 hosts, mlp'
set termoption noenhanced
set key bottom right font ',8'
set grid
set ylabel 'test accuracy'
set logscale x
set format x '%.0s%cB'
set xlabel 'bytes sent per rank (gradients + parameters)'
set title '10 Mbit/s'
plot '/tmp/lb15/round2/report_runs/plotdata/10_auto.dat' using 3:2 with linespoints title 'auto', '/tmp/lb15/round2/report_runs/plotdata/10_dgc.dat' using 3:2 with linespoints title 'dgc', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%g'
set xlabel 'training time, evaluation excluded (s)'
set title '10 Mbit/s'
plot '/tmp/lb15/round2/report_runs/plotdata/10_auto.dat' using 1:2 with linespoints title 'auto', '/tmp/lb15/round2/report_runs/plotdata/10_dgc.dat' using 1:2 with linespoints title 'dgc', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%.0s%cB'
set xlabel 'bytes sent per rank (gradients + parameters)'
set title '100 Mbit/s'
plot '/tmp/lb15/round2/report_runs/plotdata/100_auto.dat' using 3:2 with linespoints title 'auto', '/tmp/lb15/round2/report_runs/plotdata/100_dgc.dat' using 3:2 with linespoints title 'dgc', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%g'
set xlabel 'training time, evaluation excluded (s)'
set title '100 Mbit/s'
plot '/tmp/lb15/round2/report_runs/plotdata/100_auto.dat' using 1:2 with linespoints title 'auto', '/tmp/lb15/round2/report_runs/plotdata/100_dgc.dat' using 1:2 with linespoints title 'dgc', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%.0s%cB'
set xlabel 'bytes sent per rank (gradients + parameters)'
set title '1000 Mbit/s'
plot '/tmp/lb15/round2/report_runs/plotdata/1000_auto.dat' using 3:2 with linespoints title 'auto', '/tmp/lb15/round2/report_runs/plotdata/1000_dgc.dat' using 3:2 with linespoints title 'dgc', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%g'
set xlabel 'training time, evaluation excluded (s)'
set title '1000 Mbit/s'
plot '/tmp/lb15/round2/report_runs/plotdata/1000_auto.dat' using 1:2 with linespoints title 'auto', '/tmp/lb15/round2/report_runs/plotdata/1000_dgc.dat' using 1:2 with linespoints title 'dgc', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
unset multiplot
